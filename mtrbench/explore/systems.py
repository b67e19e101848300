"""The systems an explorer shows: `mtrbench eval` results with their run and per-query files, and, where a
`mtrbench rag` report sits beside a result, its answers and the judge's verdicts or ratings.

Only what results store is read; every file a result names must be there (one ``error:`` line otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.formats.generations import Generation, read_generations
from mtrbench.formats.run import read_run
from mtrbench.infra.errors import DataError, MtrbenchError, UserInputError
from mtrbench.results.documents import find_inputs, read_json
from mtrbench.results.labels import short_model
from mtrbench.results.result import QueryScores, Result


@dataclass(frozen=True)
class RagAnswers:
    """A system's generated answers and what was judged of them, from a `mtrbench rag` report."""

    report: Path
    generator: str
    answers: dict[str, Generation]  # qid -> answer
    judged: dict[str, dict[str, Any]]  # qid -> the report's per-turn row (verdict or rating, reference measures)


@dataclass
class ExploreSystem:
    name: str  # unique label: the model's short name and the history strategy
    result: Result
    rows: dict[str, QueryScores]  # qid -> its per-query scores
    ranked: dict[str, list[tuple[str, float]]]  # qid -> (doc id, score), best first, as the run file ranks them
    rag: RagAnswers | None = None
    details: dict[str, Any] = field(default_factory=dict)


def _required(result: Result, kind: str) -> Path:
    try:
        path = result.run_path if kind == "run" else result.per_query_path
    except DataError as exc:
        raise DataError(f"{exc} (explore needs the {kind} file an `mtrbench eval` result writes)") from None
    if not path.is_file():
        raise DataError(f"{result.path}: its {kind} file {path.name} is missing beside it")
    return path


def _rag_answers(result: Result) -> RagAnswers | None:
    """The `mtrbench rag` report beside the result that names it as its retrieval (the first, by name)."""
    assert result.path is not None
    for report in sorted(Path(result.path).parent.glob(f"{result.task_name}.*.rag.json")):
        document = read_json(report)
        retrieval = document.get("retrieval") if isinstance(document, dict) else None
        if not isinstance(retrieval, dict) or retrieval.get("result") != Path(result.path).name:
            continue
        generations = report.with_name(str(document.get("generations") or ""))
        if not generations.is_file():
            raise DataError(f"{report}: its generations file {generations.name} is missing beside it")
        per_turn = document.get("per_turn") or {}
        generator = str((document.get("generation") or {}).get("generator") or "")
        return RagAnswers(report, generator, read_generations(generations), {str(k): v for k, v in per_turn.items()})
    return None


def load_system(path: Path) -> ExploreSystem:
    result = Result.load(path)
    run_path, per_query_path = _required(result, "run"), _required(result, "per_query")
    try:
        rows = {row.qid: row for row in result.per_query}
    except MtrbenchError as exc:
        raise DataError(f"{per_query_path}: {exc}") from None
    run = read_run(run_path)
    ranked = {qid: sorted(docs.items(), key=lambda item: -item[1]) for qid, docs in run.items()}
    name = f"{short_model(result.model_name)} ({result.history})"
    return ExploreSystem(name, result, rows, ranked, _rag_answers(result))


def load_systems(paths: Sequence[str | Path]) -> list[ExploreSystem]:
    """The results among ``paths`` (files or folders, as `compare` takes them), all of one task and split."""
    inputs = find_inputs(list(paths))
    if not inputs.results:
        raise UserInputError(f"no mtrbench result found in {', '.join(map(str, paths))}")
    systems = [load_system(p) for p in inputs.results]
    first = systems[0].result
    for system in systems[1:]:
        other = system.result
        if (other.task_name, other.split) != (first.task_name, first.split):
            raise UserInputError(
                f"{other.path} is of {other.task_name} ({other.split}) and {first.path} of {first.task_name} "
                f"({first.split}): explore shows one task at a time"
            )
    names = [s.name for s in systems]
    for system in systems:
        if names.count(system.name) > 1:  # same model and history: the settings folder tells them apart
            system.name = f"{system.name} [{system.result.experiment or system.result.model_revision or '?'}]"
    seen: dict[str, int] = {}
    for system in systems:
        seen[system.name] = seen.get(system.name, 0) + 1
        if seen[system.name] > 1:
            system.name = f"{system.name} #{seen[system.name]}"
    return systems
