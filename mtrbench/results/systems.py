"""Systems' per-query values read back from ``eval`` results, as the meta-analyses take them.

The results may be given as result JSON files, their ``<task>.per_query.jsonl``, folders of results, or
leaderboards (whose entries record the result file they were built from). ``load_matrices`` is the one
entry point of ``mtrbench meta``: TREC runs go to ``analyses.meta.inputs``, results are read here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from mtrbench.analyses.meta.inputs import (
    InputSpec,
    ScoreMatrix,
    SystemScores,
    build_matrix,
    measure_key,
    runs_matrices,
    system_labels,
)
from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.results.documents import find_inputs, read_json
from mtrbench.results.result import Result

PER_QUERY_SUFFIX = ".per_query.jsonl"


def load_matrices(spec: InputSpec, measures: Sequence[str]) -> list[ScoreMatrix]:
    """One matrix per (task, measure), tasks first. No measure: nDCG@10 for runs, the results' main score."""
    if spec.runs:
        return runs_matrices(spec, measures)
    files = result_files(spec.results)
    keys = [measure_key(m, spec.relevance_level) for m in measures] or [Result.load(files[0]).main_score_key]
    matrices = []
    for key in keys:
        by_task = read_systems(files, key)
        missing = [t for t in spec.tasks if t not in by_task]
        if missing:
            raise UserInputError(
                f"--tasks {', '.join(missing)} not among the results' tasks ({', '.join(sorted(by_task))})"
            )
        for task in spec.tasks or sorted(by_task):
            matrices.append(build_matrix(by_task[task], key))
    return matrices


def result_files(paths: Sequence[str | Path]) -> list[Path]:
    """The result JSON files behind ``paths``: a per-query file names its result (``<task>.json`` beside it),
    a folder is searched, a leaderboard brings its entries' files."""
    resolved = [_result_path(Path(p)) for p in paths]
    inputs = find_inputs(resolved)
    files = list(inputs.results)
    for board in inputs.leaderboards:
        files.extend(leaderboard_results(board))
    if not files:
        raise UserInputError(f"no `mtrbench eval` result among {', '.join(map(str, paths))}")
    return files


def _result_path(path: Path) -> Path:
    if path.name.endswith(PER_QUERY_SUFFIX):
        return path.with_name(path.name[: -len(PER_QUERY_SUFFIX)] + ".json")
    return path


def read_systems(files: Sequence[Path], measure_key: str) -> dict[str, list[SystemScores]]:
    """Task -> its systems' per-query values of ``measure_key``, in the order of ``files``."""
    by_task: dict[str, list[SystemScores]] = {}
    described: dict[str, list[tuple[str, str | None]]] = {}
    for file in files:
        result = Result.load(file)
        values, conversations = {}, {}
        for row in result.per_query:
            if measure_key not in row.values:
                available = ", ".join(k for k in row.values) or "none"
                raise DataError(f"{result.per_query_path}: no per-query {measure_key} (has: {available})")
            values[row.qid] = row.values[measure_key]
            if row.conversation_id is not None:
                conversations[row.qid] = str(row.conversation_id)
        described.setdefault(result.task_name, []).append((result.model_name, result.history))
        by_task.setdefault(result.task_name, []).append(SystemScores("", result.task_name, values, conversations))
    return {
        task: [
            SystemScores(name, s.task, s.values, s.conversations)
            for name, s in zip(system_labels(described[task]), systems)
        ]
        for task, systems in by_task.items()
    }


def leaderboard_results(board: Path) -> list[Path]:
    """The result files a leaderboard's entries were built from: as recorded, else beside the leaderboard."""
    document = read_json(board)
    paths = []
    for entry in document.get("entries") or []:
        source = entry.get("source") if isinstance(entry, dict) else None
        recorded = source.get("result_file") if isinstance(source, dict) else None
        name = entry.get("id") if isinstance(entry, dict) else json.dumps(entry)
        if not isinstance(recorded, str):
            raise DataError(
                f"{board}: entry {name} records no source.result_file: its per-query values cannot be found"
            )
        found = next((c for c in (Path(recorded), board.parent / recorded) if c.is_file()), None)
        if found is None:
            raise DataError(
                f"{board}: entry {name}'s result file {recorded} is not here (nor beside the "
                f"leaderboard): meta needs the per-query values"
            )
        paths.append(found)
    return paths
