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


# -- ties (review gaps): tau-b for tied means, tau_AP's documented tie rules, a tie is not a swap ----------------


def _hand_tau_b(x: list[float], y: list[float]) -> float:
    """Kendall's tau-b from its definition: (C - D) / sqrt((C + D + T_x) (C + D + T_y)), T_x counting the pairs
    tied in x only and T_y those tied in y only (a pair tied in both counts in neither)."""
    concordant = discordant = tied_x = tied_y = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                tied_x += 1
            elif dy == 0:
                tied_y += 1
            elif dx * dy > 0:
                concordant += 1
            else:
                discordant += 1
    paired = concordant + discordant
    return (concordant - discordant) / ((paired + tied_x) * (paired + tied_y)) ** 0.5


def test_kendall_tau_with_tied_means_is_tau_b_not_tau_c():
    first_means = [0.5, 0.5, 0.3, 0.2, 0.1]  # a tie under A
    second_means = [0.4, 0.3, 0.3, 0.1, 0.2]  # another tie and a swap under B
    report = rank_agreement(_means(first_means), _means(second_means), "A", "B")
    expected = _hand_tau_b(first_means, second_means)
    assert report.kendall_tau == pytest.approx(expected, abs=1e-12)
    assert report.kendall_tau == pytest.approx(stats.kendalltau(first_means, second_means, variant="b").statistic)
    # the ties make the variants differ, so the check above tells them apart
    assert abs(stats.kendalltau(first_means, second_means, variant="c").statistic - expected) > 0.01


def test_tau_ap_does_not_count_a_pair_tied_in_the_reference_as_correctly_ordered():
    # B ranks s0 > s1 > s2 > s3; A ties s0 and s1. C(2) = 0 (the tied pair), C(3) = 2, C(4) = 3:
    # tau_AP = 2/3 * (0/1 + 2/2 + 3/3) - 1 = 1/3 (it would be 1 if the tie counted as correct)
    assert tau_ap(np.array([0.4, 0.4, 0.2, 0.1]), np.array([0.4, 0.3, 0.2, 0.1]), ["s0", "s1", "s2", "s3"]) == (
        pytest.approx(1 / 3, abs=1e-12)
    )


@pytest.mark.parametrize("names, expected", [(["a", "b", "c", "d"], 1.0), (["b", "a", "c", "d"], 1 / 3)])
def test_tau_ap_breaks_ties_in_the_ranked_condition_by_system_name(names, expected):
    # A orders system 0 above system 1; B ties them. Named a, b: B's order is 0, 1 (the same as A's); named b, a:
    # B's order is 1, 0, so C(2) = 0 and tau_AP = 2/3 * (0 + 1 + 1) - 1 = 1/3.
    reference = np.array([0.5, 0.4, 0.2, 0.1])
    ranked = np.array([0.3, 0.3, 0.2, 0.1])
    assert tau_ap(reference, ranked, names) == pytest.approx(expected, abs=1e-12)


def test_a_tie_on_either_set_is_not_a_swap():
    # the two systems differ on one query only, always in the same direction: any two sets either agree or
    # have a difference of exactly 0 on one of them, which orders nothing
    scores = np.array([[0.5, 0.5, 0.5, 1.0], [0.5, 0.5, 0.5, 0.5]])
    matrix = ScoreMatrix("toy", "c", ("s1", "s2"), ("q1", "q2", "q3", "q4"), ("c1", "c2", "c3", "c4"), scores)
    report = swap_method(matrix, Resampling(unit="query", samples=200, seed=3), subset_size=1)
    by_low = {b.low: b for b in report.bins}
    assert set(by_low) == {0.0, 0.5}  # both sets tied, and one set tied with the other at 0.5
    assert by_low[0.0].pairs > 0 and by_low[0.5].pairs > 0
    assert report.swap_rate == 0.0 and all(b.swaps == 0 for b in report.bins)
