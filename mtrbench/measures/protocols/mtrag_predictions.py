"""MTRAGEval Task A retrieval predictions scored as ``run_retrieval_eval.py`` scores them: one JSON object per line
with ``task_id``, ``Collection`` and ``contexts`` (``document_id``, ``score``); each collection is scored against
its qrels under MTRAG's conventions (:mod:`mtrag`), then the "all" row. As in the script, a repeated ``task_id``
keeps its last line.

Qrels are looked up per collection in a folder: an IBM/mt-rag-benchmark clone (``mtrag-human/retrieval_tasks/
<domain>/qrels/dev.tsv``; MTRAG-UN's ``mtragun-human/retrieval_tasks/qrels/<domain>.tsv``), or a folder holding
``<domain>/qrels/dev.tsv`` or ``<domain>.tsv``.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from pathlib import Path

from mtrbench.formats.qrels import Qrels, read_qrels
from mtrbench.formats.run import Run
from mtrbench.infra.errors import DataError
from mtrbench.infra.numeric import finite
from mtrbench.measures.base import Measure
from mtrbench.measures.protocols.mtrag import CollectionRow, all_row, score_mtrag

# the collection names of MTRAG's files (and MTRAG-UN's short ones) -> the domain folders of its qrels
DOMAIN_OF_COLLECTION = {
    "mt-rag-clapnq-elser-512-100-20240503": "clapnq",
    "mt-rag-ibmcloud-elser-512-100-20240502": "cloud",
    "mt-rag-fiqa-beir-elser-512-100-20240501": "fiqa",
    "mt-rag-govt-elser-512-100-20240611": "govt",
    "clapnq": "clapnq",
    "ibmcloud": "cloud",
    "cloud": "cloud",
    "fiqa": "fiqa",
    "govt": "govt",
}
# Where a collection's qrels lie under --data-dir: a clone's root (MTRAG, then MTRAG-UN), its mtrag-human or
# mtragun-human folder, their retrieval_tasks folders, or a folder of <domain>.tsv files. A clone holds both MTRAG's
# and MTRAG-UN's qrels, whose task ids differ: the file that judges the run's tasks is chosen (qrels_file).
QRELS_PLACES = (
    "mtrag-human/retrieval_tasks/{d}/qrels/dev.tsv",
    "mtragun-human/retrieval_tasks/qrels/{d}.tsv",
    "retrieval_tasks/{d}/qrels/dev.tsv",
    "retrieval_tasks/qrels/{d}.tsv",
    "{d}/qrels/dev.tsv",
    "qrels/{d}.tsv",
    "{d}.tsv",
)


def read_predictions(path: Path) -> dict[str, Run]:
    """Collection -> run (task_id -> document_id -> score)."""
    runs: dict[str, Run] = {}
    collection_of: dict[str, str] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot be read as UTF-8 text ({exc})") from None
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("task_id"), str)
            or not isinstance(row.get("Collection"), str)
        ):
            raise DataError(f"{where}: a prediction needs a string 'task_id' and 'Collection'")
        contexts = row.get("contexts", [])
        if not isinstance(contexts, list):
            raise DataError(f"{where}: 'contexts' must be a list")
        scores: dict[str, float] = {}
        for i, context in enumerate(contexts):
            score = context.get("score") if isinstance(context, dict) else None
            if (
                not isinstance(context, dict)
                or context.get("document_id") is None
                or not isinstance(score, (int, float))
                or isinstance(score, bool)
            ):
                raise DataError(f"{where}: context {i} needs a 'document_id' and a numeric 'score'")
            scores[str(context["document_id"])] = finite(score, f"{where} context {i}", "'score'")
        previous = collection_of.get(row["task_id"])
        if previous is not None:
            runs[previous].pop(row["task_id"])
        collection_of[row["task_id"]] = row["Collection"]
        runs.setdefault(row["Collection"], {})[row["task_id"]] = scores
    if not runs:
        raise DataError(f"{path}: no prediction")
    return {name: run for name, run in runs.items() if run}


def qrels_file(folder: Path, collection: str, task_ids: Collection[str] = ()) -> tuple[Path, Qrels]:
    """The qrels file (and its judgments) for one collection of a prediction file: of the files found under
    ``folder``, the one that judges most of ``task_ids`` (the first found on a tie, e.g. none judged)."""
    domain = DOMAIN_OF_COLLECTION.get(collection)
    if domain is None:
        raise DataError(f"collection '{collection}' is not one of MTRAG's: {', '.join(DOMAIN_OF_COLLECTION)}")
    found = list(dict.fromkeys(p for p in (folder / place.format(d=domain) for place in QRELS_PLACES) if p.is_file()))
    if not found:
        raise DataError(
            f"no qrels for collection '{collection}' under {folder} (looked for "
            f"{', '.join(place.format(d=domain) for place in QRELS_PLACES)})"
        )
    candidates = [(path, read_qrels(path)) for path in found]
    wanted = set(task_ids)
    return max(candidates, key=lambda candidate: len(wanted & candidate[1].keys()))


def score_predictions(
    path: Path, qrels_folder: Path, measures: Sequence[Measure], relevance_level: int | None = None
) -> list[CollectionRow]:
    """One row per collection (in order of first appearance), then the "all" row; ``relevance_level``, when
    given, must be the script's (1)."""
    from mtrbench.measures.protocols import PROTOCOLS  # deferred: the package imports this module (a cycle)

    relevance_level = PROTOCOLS["mtrag"].level(relevance_level)
    rows = []
    for collection, run in read_predictions(path).items():
        _, qrels = qrels_file(qrels_folder, collection, run.keys())
        evaluation = score_mtrag(qrels, run, measures, relevance_level)
        rows.append(CollectionRow(collection, evaluation.scores(), len(run)))
    return [*rows, all_row(rows)]
