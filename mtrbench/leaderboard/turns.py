"""Per-turn scores of leaderboard entries, read from the result files the user points at.

A leaderboard entry keeps aggregate scores only; the per-query file beside its `mtrbench eval` result
holds each query's conversation and turn. Results are matched to entries by identity (same model,
revision, task, split, dataset revision and score-changing settings), never by a path stored in the
leaderboard file, so a downloaded leaderboard cannot make the page read an arbitrary file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mtrbench.infra.errors import MtrbenchError
from mtrbench.leaderboard.entries import entry_from_result
from mtrbench.leaderboard.keys import identity
from mtrbench.analyses.turn_bands import TurnBand, turn_bands
from mtrbench.results.documents import find_inputs
from mtrbench.results.result import Result

# entry id -> metric -> bands, turns ascending
TurnCurves = dict[str, dict[str, list[TurnBand]]]


def turn_curves(document: dict[str, Any], results_dirs: list[Path], warnings: list[str] | None = None) -> TurnCurves:
    """Bands of every group's main metric for each run entry that has a matching result under ``results_dirs``.

    A result that cannot be read (or lacks its per-query file) is skipped and described in ``warnings``:
    the page is still written, without that curve.
    """
    wanted: dict[str, set[str]] = {}
    by_identity: dict[str, list[str]] = {}
    for entry in document["entries"]:
        if entry["label"] == "run":
            by_identity.setdefault(identity(entry), []).append(entry["id"])
            wanted[entry["id"]] = {entry["main_score"]}
    for group in document.get("groups", []):
        for entry_id in group["entries"]:
            if entry_id in wanted:
                task = next(e["task"] for e in document["entries"] if e["id"] == entry_id)
                wanted[entry_id].add(group["main_scores"][task])
    curves: TurnCurves = {}
    for path in find_inputs(list(results_dirs)).results:
        try:
            result = Result.load(path)
            matches = by_identity.get(identity(entry_from_result(path, result)), [])
            rows = [row.as_row() for row in result.per_query] if matches else []
        except MtrbenchError as exc:
            if warnings is not None:
                warnings.append(str(exc))
            continue
        for entry_id in matches:
            for metric in sorted(wanted[entry_id]):
                points = [(r.get("conversation_id"), r.get("turn_id"), r[metric]) for r in rows
                          if isinstance(r.get(metric), (int, float)) and isinstance(r.get("turn_id"), int)
                          and r.get("conversation_id") is not None]
                if points:
                    curves.setdefault(entry_id, {})[metric] = turn_bands(points)
    return curves
