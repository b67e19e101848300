"""Leaderboard figures: named after their table, intervals from the per-query files (BM25, six history strategies,
tests/data/compare)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from mtrbench.leaderboard.build import build_document
from mtrbench.leaderboard.entries import results_in
from mtrbench.leaderboard.schema import leaderboards_dir

COMPARE = Path(__file__).resolve().parents[1] / "data" / "compare"


@pytest.fixture(scope="module")
def six_strategies():
    return build_document(results_in(COMPARE), name="six", description="BM25, six history strategies")


def test_figure_names_say_what_each_figure_shows():
    from mtrbench.leaderboard.pivot import pivots
    from mtrbench.leaderboard.plot import figure_names
    from mtrbench.leaderboard.render import groups_of

    document = json.loads((leaderboards_dir() / "reported.json").read_text())
    groups, _ = groups_of(document)
    tables = pivots(groups, document["entries"])
    names = figure_names(document, tables, {e["id"]: e for e in document["entries"]})
    assert len(names) == len(set(names)) == len(tables)
    assert not [n for n in names if re.search(r"__g\d+(\.png|-)", n)]  # no bare group ids
    assert all(n.startswith("reported__") and n.endswith(".png") for n in names)
    assert any("rad-bench" in n for n in names) and any("coral" in n for n in names)


def test_intervals_are_conversation_bootstrap_of_the_entry_score(six_strategies):
    """The interval holds the entry's score (the mean of its per-query values, read here from the file) and is
    about as wide as a t-interval over the conversations' means (scipy): a bootstrap over queries, or a
    wrong metric, would not be."""
    from mtrbench.leaderboard.turns import entry_intervals

    intervals = entry_intervals(six_strategies, [COMPARE])
    assert len(intervals) == len(six_strategies["entries"]) == 6
    for entry in six_strategies["entries"]:
        metric = entry["main_score"]
        low, high = intervals[entry["id"]][metric]
        folder = entry["settings"]["history"].replace(":", "-")  # window:5 is stored as window-5
        rows = [
            json.loads(line) for line in (COMPARE / folder / "mtrbench-sample.per_query.jsonl").read_text().splitlines()
        ]
        values = [r[metric] for r in rows]
        assert np.mean(values) == pytest.approx(entry["scores"][metric])
        assert low <= entry["scores"][metric] <= high
        by_conversation: dict[str, list[float]] = {}
        for r in rows:
            by_conversation.setdefault(r["conversation_id"], []).append(r[metric])
        means = np.array([np.mean(v) for v in by_conversation.values()])
        half = stats.t.ppf(0.975, len(means) - 1) * stats.sem(means)
        assert 0.6 < (high - low) / (2 * half) < 1.6, (entry["id"], low, high, half)


def test_six_strategies_make_one_figure(six_strategies, tmp_path):
    from PIL import Image

    from mtrbench.leaderboard.plot import plot_leaderboard
    from mtrbench.leaderboard.turns import entry_intervals

    written = plot_leaderboard(six_strategies, tmp_path, intervals=entry_intervals(six_strategies, [COMPARE]))
    assert [p.name for p in written] == ["six__mtrbench-runs-mtrbench-sample-by-history-strategy.png"]
    with Image.open(written[0]) as image:
        assert image.format == "PNG" and image.width >= 600 and image.height >= 300
