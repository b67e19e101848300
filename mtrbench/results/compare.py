"""Read per-query metrics back from result files (or score TREC runs) for paired comparisons."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mtrbench.analyses.compare_many import SystemScores
from mtrbench.formats.run import read_run
from mtrbench.infra.errors import DataError, MtrbenchError, UserInputError
from mtrbench.results.documents import read_json
from mtrbench.results.result import Result

if TYPE_CHECKING:
    from mtrbench.measures import Measure


def load_per_query(result_json: str | Path) -> tuple[str, dict[str, dict[str, float]]]:
    """(label, qid -> metric -> value) from an ``mtrbench eval`` result JSON or a ``score --output`` JSON."""
    path = Path(result_json)
    if not path.is_file():
        raise MtrbenchError(f"result file {path} does not exist")
    document = read_json(path)
    if isinstance(document, dict) and "per_query" in document:  # mtrbench score --output
        per_query = document["per_query"]
        if not isinstance(per_query, dict) or not all(isinstance(v, dict) for v in per_query.values()):
            raise DataError(f"{path}: per_query must map each query id to its metrics")
        return Path(str(document.get("run") or path.name)).name, per_query
    try:
        result = Result.from_document(document, path)
    except DataError as exc:
        raise DataError(f"{exc} (no per-query file recorded)") from None
    label = f"{result.model_name} ({result.history})"
    return label, result.per_query_values()


@dataclass(frozen=True)
class RunJudgments:
    """What scores TREC runs given to ``compare``: qrels, their relevance level and the measures to compute."""

    qrels: dict[str, dict[str, int]]
    relevance_level: int
    measures: list[Measure]
    conversations: dict[str, str]  # qid -> conversation id, from the task (empty with a bare qrels file)


def load_system(path_text: str, judgments: RunJudgments | None) -> SystemScores:
    """An ``mtrbench eval`` result JSON, a ``score --output`` JSON, or a TREC run scored with ``judgments``."""
    path = Path(path_text)
    if not path.is_file():
        raise MtrbenchError(f"{path} does not exist")
    if path.suffix.lower() != ".json":
        return _scored_run(path, judgments)
    document = read_json(path)
    if isinstance(document, dict) and "per_query" in document:  # mtrbench score --output
        name, per_query = load_per_query(path)
        return SystemScores(name, per_query, judgments.conversations if judgments else {})
    try:
        result = Result.from_document(document, path)
        rows = result.per_query
    except DataError as exc:
        raise DataError(f"{exc} (no per-query file recorded)") from None
    return SystemScores(
        f"{result.model_name} ({result.history})",
        {r.qid: r.values for r in rows},
        {r.qid: r.conversation_id for r in rows if r.conversation_id is not None},
    )


def _scored_run(path: Path, judgments: RunJudgments | None) -> SystemScores:
    from mtrbench.measures import evaluate  # deferred: loads pytrec_eval

    if judgments is None:
        raise UserInputError(f"{path} is a TREC run (not a .json result): give --qrels FILE or --task NAME to score it")
    run = read_run(path)
    evaluation = evaluate(judgments.qrels, run, judgments.measures, relevance_level=judgments.relevance_level)
    if not set(run) & set(evaluation.per_query):
        raise DataError(f"run {path} has none of the judged queries: is it of the same task?")
    return SystemScores(path.name, evaluation.per_query, judgments.conversations)
