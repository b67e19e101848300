"""Where a turn's passages come from: the top-k of a retrieval result, or the gold passages (oracle)."""

from __future__ import annotations

from pathlib import Path

from mtrbench.data.model import ConversationalQuery
from mtrbench.formats.run import Run, ranked, read_run
from mtrbench.infra.errors import DataError, MtrbenchError
from mtrbench.results.result import Result


def resolve_run_file(path: str | Path) -> Path:
    """A TREC run file; an eval result JSON (its run is the file ``mtrbench.files.run`` beside it); or a
    folder holding exactly one ``*.run.trec``."""
    path = Path(path)
    if path.is_dir():
        runs = sorted(path.glob("*.run.trec"))
        if len(runs) != 1:
            raise MtrbenchError(f"{path}: expected one *.run.trec in the folder, found {len(runs)}; name the file")
        return runs[0]
    if not path.is_file():
        raise MtrbenchError(f"retrieval result {path} not found")
    if path.suffix == ".json":
        try:
            result = Result.load(path)
        except MtrbenchError as exc:
            raise DataError(f"{exc}; pass the .run.trec file") from None
        if "run" not in result.files:
            raise DataError(f"{path}: not an mtrbench eval result (no mtrbench.files.run); pass the .run.trec file")
        # the file only names a sibling: it never decides a path elsewhere
        name = result.files["run"]
        if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
            raise DataError(f"{path}: mtrbench.files.run must be a plain file name, got {name!r}")
        run_path = result.run_path
        if not run_path.is_file():
            raise DataError(f"{path}: its run file {run_path} is missing")
        return run_path
    return path


def load_run(path: str | Path) -> tuple[Path, Run]:
    run_path = resolve_run_file(path)
    return run_path, read_run(run_path)


def run_passages(run: Run, qid: str, top_k: int) -> list[str] | None:
    """The top-k document ids for a query in trec_eval order; None when the run has no line for it."""
    docs = run.get(qid)
    if docs is None:
        return None
    return [doc_id for doc_id, _ in ranked(docs)[:top_k]]


def has_reference_passages(query: ConversationalQuery) -> bool:
    """The task gives this turn's reference passages (MTRAG-UN's generation tasks: MTRAGEval Task B), maybe none
    (an unanswerable turn is still asked, with no passages)."""
    return isinstance(query.meta.get("reference_passages"), list)


def oracle_passages(query: ConversationalQuery, top_k: int) -> list[str]:
    """The task's reference passages where it gives them (MTRAGEval Task B's input, in the task's order); else
    the gold passages (grade > 0), highest grade first, then by id; at most top_k."""
    if has_reference_passages(query):
        return [str(d) for d in query.meta["reference_passages"] if d][:top_k]
    gold = sorted(
        ((grade, doc_id) for doc_id, grade in query.qrels.items() if grade > 0), key=lambda pair: (-pair[0], pair[1])
    )
    return [doc_id for _, doc_id in gold[:top_k]]
