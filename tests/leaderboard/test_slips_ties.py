"""Rank groups from the Holm-adjusted adjacent p-values, and an untestable pair that still differs: expected
decisions come from scipy's paired t-test and statsmodels' Holm, computed here."""

from __future__ import annotations

import numpy as np
from scipy.stats import ttest_rel
from statsmodels.stats.multitest import multipletests

from mtrbench.analyses.compare_many import SystemScores
from mtrbench.leaderboard.ties import ALPHA, rank_groups

METRIC = "ndcg_at_10"
# one query per conversation: a conversation's mean is the query's value
A = np.array([0.9, 0.8, 0.7, 0.85, 0.75, 0.6])
B = A - np.array([0.1, 0.02, 0.15, 0.0, 0.09, 0.04])
C = B - np.array([0.1, 0.0, 0.12, 0.01, 0.07, 0.02])


def _system(name: str, values: np.ndarray) -> SystemScores:
    per_query = {f"c{i}_1": {METRIC: float(v)} for i, v in enumerate(values)}
    return SystemScores(name, per_query, {q: q.split("_")[0] for q in per_query})


def _groups(systems: dict[str, np.ndarray]) -> dict[str, str]:
    scores = {name: _system(name, values) for name, values in systems.items()}
    means = {name: float(np.mean(values)) for name, values in systems.items()}
    groups = rank_groups(means, scores, METRIC)
    assert groups.tie_aware, groups.note
    return groups.labels


def test_groups_follow_holm_adjusted_not_raw_p_values():
    raw = [ttest_rel(A, B).pvalue, ttest_rel(B, C).pvalue]
    holm = multipletests(raw, alpha=ALPHA, method="holm")[1]
    # the fixture's point: each adjacent step is significant alone, neither after Holm over the two
    assert all(p < ALPHA for p in raw) and all(p >= ALPHA for p in holm)
    assert _groups({"a": A, "b": B, "c": C}) == {"a": "1-3", "b": "1-3", "c": "1-3"}


def test_constant_non_zero_difference_is_not_a_tie():
    """b trails a by exactly 0.125 in every conversation: no t statistic exists, but the systems differ."""
    better = np.array([0.875, 0.75, 0.625, 0.5, 0.375, 0.25])  # binary fractions: the differences are exact
    worse = better - 0.125
    assert set(better - worse) == {0.125}
    assert _groups({"a": better, "b": worse}) == {"a": "1", "b": "2"}
    # identical systems: every difference zero, one group
    assert _groups({"a": better, "b": better.copy()}) == {"a": "1-2", "b": "1-2"}
