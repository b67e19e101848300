"""TREC run and qrels files.

Run lines: ``qid Q0 docid rank score tag``; qrels lines: ``qid iter docid grade``. Within a query,
runs are written in the order trec_eval ranks them: score descending, ties by doc id descending.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from mtrbench.errors import MtrbenchError

Run = dict[str, dict[str, float]]
Qrels = dict[str, dict[str, int]]


def ranked(docs: dict[str, float]) -> list[tuple[str, float]]:
    """trec_eval's order: score descending, then doc id descending."""
    return sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)


def _fields(path: str | Path, kind: str):
    """(path, line number, whitespace-split fields) for each non-blank line."""
    path = Path(path)
    if not path.is_file():
        raise MtrbenchError(f"{kind} file {path} does not exist")
    with path.open(encoding="utf-8") as handle:
        for n, line in enumerate(handle, 1):
            parts = line.split()
            if parts:
                yield path, n, parts


def read_run(path: str | Path) -> Run:
    run: Run = {}
    for path, n, parts in _fields(path, "run"):
        if len(parts) != 6:
            raise MtrbenchError(f"{path}:{n}: a run line needs 6 fields 'qid Q0 docid rank score tag', got {len(parts)}")
        qid, _, doc_id, _, score, _ = parts
        try:
            value = float(score)
        except ValueError:
            raise MtrbenchError(f"{path}:{n}: score '{score}' is not a number") from None
        docs = run.setdefault(qid, {})
        if doc_id in docs:
            raise MtrbenchError(f"{path}:{n}: document '{doc_id}' appears twice for query '{qid}'")
        docs[doc_id] = value
    return run


def read_qrels(path: str | Path) -> Qrels:
    qrels: Qrels = {}
    for path, n, parts in _fields(path, "qrels"):
        if len(parts) == 3 and n == 1 and parts[0] == "query-id":
            continue  # BEIR header
        if len(parts) == 3:
            qid, doc_id, grade = parts
        elif len(parts) == 4:
            qid, _, doc_id, grade = parts
        else:
            raise MtrbenchError(f"{path}:{n}: a qrels line needs 'qid iter docid grade' (or BEIR 'qid docid score')")
        try:
            qrels.setdefault(qid, {})[doc_id] = int(float(grade))
        except ValueError:
            raise MtrbenchError(f"{path}:{n}: grade '{grade}' is not an integer") from None
    return qrels


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def atomic_write_text(path: str | Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; results are meant to be shared like any file
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def format_run(run: Run, tag: str) -> str:
    lines = []
    for qid in run:
        for rank, (doc_id, score) in enumerate(ranked(run[qid]), 1):
            lines.append(f"{qid} Q0 {doc_id} {rank} {score:.9g} {tag}")
    return "\n".join(lines) + ("\n" if lines else "")


def format_qrels(qrels: Qrels) -> str:
    return "".join(f"{qid} 0 {doc_id} {grade}\n" for qid, docs in qrels.items() for doc_id, grade in docs.items())
