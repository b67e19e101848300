"""Per-turn scores of leaderboard entries, read from the result files the user points at.

A leaderboard entry keeps aggregate scores only; the per-query file beside its `mtrbench eval` result
holds each query's conversation and turn. Results are matched to entries by identity (same model,
revision, task, split, dataset revision and score-changing settings), never by a path stored in the
leaderboard file, so a downloaded leaderboard cannot make the page read an arbitrary file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mtrbench.analyses.compare_many import SystemScores
from mtrbench.analyses.turn_bands import TurnBand, conversation_bootstrap, turn_bands
from mtrbench.infra.errors import MtrbenchError
from mtrbench.leaderboard.entries import result_entry
from mtrbench.leaderboard.keys import identity
from mtrbench.leaderboard.ties import system_scores
from mtrbench.results.documents import find_inputs
from mtrbench.results.result import Result

# entry id -> metric -> bands, turns ascending
TurnCurves = dict[str, dict[str, list[TurnBand]]]
# entry id -> metric -> (low, high)
Intervals = dict[str, dict[str, tuple[float, float]]]


def _matched_rows(
    document: dict[str, Any], results_dirs: list[Path], warnings: list[str] | None
) -> dict[str, list[dict[str, Any]]]:
    """entry id -> the per-query rows of the result under ``results_dirs`` that has the entry's identity."""
    by_identity: dict[str, list[str]] = {}
    for entry in document["entries"]:
        if entry["label"] == "run":
            by_identity.setdefault(identity(entry), []).append(entry["id"])
    matched: dict[str, list[dict[str, Any]]] = {}
    for path in find_inputs(list(results_dirs)).results:
        try:
            result = Result.load(path)
            matches = by_identity.get(identity(result_entry(path, result)), [])
            rows = [row.as_row() for row in result.per_query] if matches else []
        except MtrbenchError as exc:
            if warnings is not None:
                warnings.append(str(exc))
            continue
        for entry_id in matches:
            matched[entry_id] = rows
    return matched


def _points(rows: list[dict[str, Any]], metric: str) -> list[tuple[Any, int, float]]:
    return [
        (r.get("conversation_id"), r.get("turn_id"), r[metric])
        for r in rows
        if isinstance(r.get(metric), (int, float))
        and isinstance(r.get("turn_id"), int)
        and r.get("conversation_id") is not None
    ]


def _wanted_metrics(document: dict[str, Any]) -> dict[str, set[str]]:
    """entry id -> its main score and the main score of every group it is in."""
    by_id = {e["id"]: e for e in document["entries"]}
    wanted = {e["id"]: {e["main_score"]} for e in document["entries"] if e["label"] == "run"}
    for group in document.get("groups", []):
        for entry_id in group["entries"]:
            if entry_id in wanted:
                wanted[entry_id].add(group["main_scores"][by_id[entry_id]["task"]])
    return wanted


def turn_curves(document: dict[str, Any], results_dirs: list[Path], warnings: list[str] | None = None) -> TurnCurves:
    """Bands of every group's main metric for each run entry that has a matching result under ``results_dirs``.

    A result that cannot be read (or lacks its per-query file) is skipped and described in ``warnings``:
    the page is still written, without that curve.
    """
    wanted = _wanted_metrics(document)
    curves: TurnCurves = {}
    for entry_id, rows in _matched_rows(document, results_dirs, warnings).items():
        for metric in sorted(wanted.get(entry_id, ())):
            points = _points(rows, metric)
            if points:
                curves.setdefault(entry_id, {})[metric] = turn_bands(points)
    return curves


def entry_intervals(document: dict[str, Any], results_dirs: list[Path], warnings: list[str] | None = None) -> Intervals:
    """95% interval of each run entry's score (every group's main metric): the percentile bootstrap over
    conversations of the mean over all queries (conversations resampled, as for the per-turn bands)."""
    wanted = _wanted_metrics(document)
    intervals: Intervals = {}
    for entry_id, rows in _matched_rows(document, results_dirs, warnings).items():
        for metric in sorted(wanted.get(entry_id, ())):
            sums: dict[str, float] = {}
            counts: dict[str, int] = {}
            for conversation, _, value in _points(rows, metric):
                sums[str(conversation)] = sums.get(str(conversation), 0.0) + float(value)
                counts[str(conversation)] = counts.get(str(conversation), 0) + 1
            if sums:
                keys = list(sums)
                intervals.setdefault(entry_id, {})[metric] = conversation_bootstrap(
                    np.array([sums[c] for c in keys]), np.array([counts[c] for c in keys], dtype=float)
                )
    return intervals


def per_query_scores(
    document: dict[str, Any], results_dirs: list[Path], warnings: list[str] | None = None
) -> dict[str, SystemScores]:
    """entry id -> the per-query scores of its matching result under ``results_dirs`` (for tie-aware ranks);
    entries without one are absent, results that cannot be read are described in ``warnings``."""
    return {
        entry_id: system_scores(entry_id, rows)
        for entry_id, rows in _matched_rows(document, results_dirs, warnings).items()
        if rows
    }
