"""A p-value exactly equal to alpha is not significant: significance is p < alpha, in `compare`'s letters and in
`meta power`'s count of significant pairs.

The p-values here are exact sign-flip tests whose value is known by hand: with n units whose differences all have
the same sign, only the observed assignment and its mirror reach the observed |mean difference|, so p = 2 / 2^n,
a dyadic number that floating point holds exactly."""

from __future__ import annotations

import numpy as np
import pytest

from mtrbench.analyses.compare_many import CompareOptions, SystemScores, compare_systems
from mtrbench.analyses.meta.inputs import ScoreMatrix
from mtrbench.analyses.meta.power import discriminative_power
from mtrbench.analyses.meta.tests import Resampling

BASE = [0.1, 0.3, 0.2, 0.4, 0.5]
BETTER = [0.3, 0.6, 0.35, 0.9, 0.6]  # higher on each of the 5 queries, by different amounts
EXACT_P = 2 / 2**5


def _two_systems() -> list[SystemScores]:
    return [
        SystemScores(name, {f"q{i}": {"ndcg_at_10": v} for i, v in enumerate(values)})
        for name, values in (("base", BASE), ("better", BETTER))
    ]


@pytest.mark.parametrize("alpha, significant", [(EXACT_P, False), (np.nextafter(EXACT_P, 1), True)])
def test_compare_letters_need_a_p_value_below_alpha(alpha, significant):
    options = CompareOptions(measures=("ndcg_at_10",), test="randomization", n_resamples=64, alpha=alpha)
    table = compare_systems(_two_systems(), options)
    [test] = table.tests
    assert test.p_value == EXACT_P and test.p_holm == EXACT_P  # one pair: Holm leaves it as it is
    assert table.beats(1, "ndcg_at_10") == ([0] if significant else [])
    assert table.beats(0, "ndcg_at_10") == []


@pytest.mark.parametrize("alpha, significant", [(EXACT_P, 0), (np.nextafter(EXACT_P, 1), 1)])
def test_meta_power_counts_a_pair_only_below_alpha(alpha, significant):
    matrix = ScoreMatrix(
        "toy", "ndcg_at_10", ("base", "better"), tuple(f"q{i}" for i in range(5)), ("c0",) * 5, np.array([BASE, BETTER])
    )
    report = discriminative_power(matrix, Resampling(test="randomization", unit="query", samples=64), alpha=alpha)
    assert report.exact and [p.p for p in report.pairs] == [EXACT_P]
    assert report.significant_pairs == significant
    assert report.discriminative_power == significant
