"""Ranking agreement (Kendall tau-b, tau_AP, swapped pairs) and the swap method."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from mtrbench.analyses.meta.inputs import ScoreMatrix
from mtrbench.analyses.meta.stability import rank_agreement, swap_method, tau_ap
from mtrbench.analyses.meta.tests import Resampling
from mtrbench.infra.errors import DataError


def _means(values: list[float], name: str = "c") -> ScoreMatrix:
    """A matrix whose systems have exactly these means (two queries, one conversation each)."""
    scores = np.array([[v, v] for v in values], dtype=float)
    return ScoreMatrix("toy", name, tuple(f"s{i + 1}" for i in range(len(values))), ("q1", "q2"), ("c1", "c2"), scores)


def test_tau_ap_hand_worked_swap_at_the_top_costs_more_than_at_the_bottom():
    names = ["s1", "s2", "s3", "s4"]
    truth = np.array([4.0, 3.0, 2.0, 1.0])
    # B ranks s2, s1, s3, s4: C(2)=0 of 1, C(3)=2 of 2, C(4)=3 of 3 -> 2/3 * (0 + 1 + 1) - 1 = 1/3
    assert tau_ap(truth, np.array([3.0, 4.0, 2.0, 1.0]), names) == pytest.approx(1 / 3)
    # B ranks s1, s2, s4, s3: 1 + 1 + 2/3 -> 2/3 * 8/3 - 1 = 7/9
    assert tau_ap(truth, np.array([4.0, 3.0, 1.0, 2.0]), names) == pytest.approx(7 / 9)
    assert tau_ap(truth, truth, names) == pytest.approx(1.0)
    assert tau_ap(truth, -truth, names) == pytest.approx(-1.0)


def test_rank_agreement_is_scipy_kendalltau_and_lists_the_swapped_pairs():
    first, second = [0.50, 0.42, 0.40, 0.31, 0.30], [0.47, 0.45, 0.38, 0.33, 0.34]
    agreement = rank_agreement(_means(first), _means(second), "original", "refined")
    expected = stats.kendalltau(first, second)
    assert agreement.kendall_tau == pytest.approx(expected.statistic) and agreement.kendall_tau == pytest.approx(0.8)
    assert agreement.kendall_p == pytest.approx(expected.pvalue)
    assert [(p.a, p.b) for p in agreement.swapped] == [("s4", "s5")]
    assert agreement.swapped[0].diff_first == pytest.approx(0.01)
    assert agreement.swapped[0].diff_second == pytest.approx(-0.01)


def test_rank_agreement_refuses_a_condition_without_any_ranking():
    with pytest.raises(DataError, match="same mean"):
        rank_agreement(_means([0.5, 0.4, 0.3]), _means([0.2, 0.2, 0.2]), "a", "b")


def test_swap_method_swaps_close_pairs_and_never_a_wide_gap():
    rng = np.random.default_rng(3)
    noise = rng.normal(0, 0.05, size=(3, 40))
    # s1 and s2 differ by 0.01 on average, s3 trails by 0.5: its pairs land in high bins, never swapped
    scores = np.vstack([0.60 + noise[0], 0.59 + noise[1], 0.10 + noise[2]])
    matrix = ScoreMatrix(
        "toy",
        "ndcg_at_3",
        ("s1", "s2", "s3"),
        tuple(f"q{j}" for j in range(40)),
        tuple(f"c{j}" for j in range(40)),
        scores,
    )
    report = swap_method(matrix, Resampling(unit="query", samples=200, seed=0), bin_width=0.01)
    assert report.subset_size == 20 and sum(b.pairs for b in report.bins) == 3 * 200
    wide = [b for b in report.bins if b.low >= 0.3]
    assert sum(b.pairs for b in wide) == 2 * 200 and all(b.swaps == 0 for b in wide)
    assert sum(b.swaps for b in report.bins) > 0  # the close pair swaps in some trials
    # the MDD closes the last bin that swaps too often: inside the close pair's range, far below the gap
    assert report.mdd is not None and 0 < report.mdd < 0.2
    last_bad = [b for b in report.bins if b.rate > 0.05][-1]
    assert last_bad.high == report.mdd and all(b.rate <= 0.05 for b in report.bins if b.low >= report.mdd)
    assert report.swap_rate == pytest.approx(sum(b.swaps for b in report.bins) / 600)
    again = swap_method(matrix, Resampling(unit="query", samples=200, seed=0), bin_width=0.01)
    assert again == report
