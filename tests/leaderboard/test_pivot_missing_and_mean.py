"""Pivot tables with a hole and with mixed measures, built by hand: a system without a score for a column ranks
after every system that has them all and has no mean; the mean column exists only when every column holds one
measure."""

from __future__ import annotations

from statistics import fmean

import pytest

from mtrbench.leaderboard.html import pivot_table
from mtrbench.leaderboard.pivot import TASKS, pivots

TASK_NAMES = ("t1", "t2", "t3")
# per system, its main score on each task (None: no result for that task)
SCORES = {
    "alpha": (0.40, 0.50, 0.60),
    "beta": (0.45, 0.55, 0.65),
    "gamma": (0.99, None, 0.99),  # the best on what it has, but one task short
}


def _entry(system: str, task: str, metric: str, value: float) -> dict:
    return {
        "id": f"{system}__{task}",
        "label": "run",
        "model": system,
        "model_revision": "r1",
        "task": task,
        "main_score": metric,
        "scores": {metric: value},
        "source": {},
    }


def _board(main_scores: dict[str, str]) -> tuple[list[dict], list[dict]]:
    entries = [
        _entry(system, task, main_scores[task], value)
        for system, values in SCORES.items()
        for task, value in zip(TASK_NAMES, values)
        if value is not None
    ]
    ranks = {
        task: {
            e["id"]: 1
            + sum(o["scores"][main_scores[task]] > e["scores"][main_scores[task]] for o in entries if o["task"] == task)
            for e in entries
            if e["task"] == task
        }
        for task in TASK_NAMES
    }
    group = {
        "id": "g1",
        "comparability": {"label": "run", "history": "full"},
        "tasks": list(TASK_NAMES),
        "entries": [e["id"] for e in entries],
        "main_scores": main_scores,
        "ranks": ranks,
        "systems": {
            system: {
                "model": system,
                "entries": {t: f"{system}__{t}" for t, v in zip(TASK_NAMES, values) if v is not None},
            }
            for system, values in SCORES.items()
        },
    }
    return [group], entries


def test_a_system_without_a_score_for_a_column_ranks_last_and_has_no_mean():
    [pivot] = pivots(*_board({t: "ndcg_at_10" for t in TASK_NAMES}))
    assert pivot.kind == TASKS and pivot.has_mean
    rows = {r.key: r for r in pivot.rows}
    assert [r.key for r in pivot.rows] == ["beta", "alpha", "gamma"]  # by mean; gamma's 0.99s do not lift it
    assert rows["beta"].mean == pytest.approx(fmean(SCORES["beta"]), abs=1e-12)
    assert rows["alpha"].mean == pytest.approx(fmean(SCORES["alpha"]), abs=1e-12)
    assert (rows["beta"].rank, rows["alpha"].rank) == (1, 2)
    assert rows["gamma"].mean is None and rows["gamma"].rank is None
    assert [c.value for c in rows["gamma"].cells] == [0.99, None, 0.99]
    html = pivot_table(pivot)
    assert html.count('class="num bar mean"') == 3 and 'data-key="mean"' in html


def test_no_mean_column_when_the_columns_hold_different_measures():
    [pivot] = pivots(*_board({"t1": "ndcg_at_10", "t2": "ndcg_at_10", "t3": "recall_at_100"}))
    assert pivot.kind == TASKS and not pivot.has_mean
    assert all(r.mean is None for r in pivot.rows)
    html = pivot_table(pivot)
    assert 'data-key="mean"' not in html and 'class="num bar mean"' not in html
    # without a mean the rows rank by the first column: gamma's 0.99 on t1 is the best
    assert [(r.key, r.rank) for r in pivot.rows] == [("gamma", 1), ("beta", 2), ("alpha", 3)]
