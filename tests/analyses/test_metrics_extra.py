"""Hole@k (three definitions), RAGAlign, pool analysis and significance against hand values and scipy/beir."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from mtrbench.analyses.holes import filled_holes, hole_bridge
from mtrbench.analyses.pool import pool_analysis
from mtrbench.analyses.significance import bootstrap_ci, compare_paired, randomization_test
from mtrbench.measures import evaluate, parse_measures
from mtrbench.measures.families.ragalign import ragalign_binary, ragalign_pointbiserial

QRELS = {"q1": {"a": 1, "b": 0}, "q2": {"c": 1}, "q3": {"d": 1}}
RUN = {"q1": {"a": 0.9, "x": 0.8, "b": 0.7, "y": 0.6}, "q2": {"c": 0.5, "a": 0.4}, "q3": {}}


def hole_unjudged(qrels, run, ks):
    return evaluate(qrels, run, parse_measures(["hole_unjudged"], ks)).per_query


def hole_beir(qrels, run, ks):
    return evaluate(qrels, run, parse_measures(["hole_beir"], ks)).aggregates


def test_hole_unjudged_by_hand():
    h = hole_unjudged(QRELS, RUN, [1, 2, 4, 10])
    assert h["q1"] == {
        "hole_unjudged_at_1": 0.0,
        "hole_unjudged_at_2": 0.5,
        "hole_unjudged_at_4": 0.5,
        "hole_unjudged_at_10": 0.5,
    }
    # q2: 'a' is judged, but not for q2
    assert h["q2"]["hole_unjudged_at_2"] == 0.5 and h["q2"]["hole_unjudged_at_10"] == 0.5
    assert h["q3"]["hole_unjudged_at_10"] == 0.0  # empty ranking: nothing retrieved, nothing unjudged


def test_hole_beir_equals_beir():
    from beir.retrieval.evaluation import EvaluateRetrieval

    ks = [1, 2, 4, 10]
    expected = EvaluateRetrieval.evaluate_custom(QRELS, RUN, ks, "hole")
    ours = hole_beir(QRELS, RUN, ks)
    assert ours == {f"hole_beir_at_{k}": expected[f"Hole@{k}"] for k in ks}
    # by hand: judged anywhere = {a, b, c, d}; q1 top-2 has x: 1/2; q2 none -> (0.5 + 0) / 3 queries
    assert ours["hole_beir_at_2"] == round(0.5 / 3, 5)


def test_hole_bridge_by_hand():
    original = {"q1": {"a": 1}, "q2": {"c": 1}}
    refined = {"q1": {"a": 1, "x": 1, "y": 2, "z": 0}, "q2": {"c": 1}}
    assert filled_holes(original, refined) == {"q1": {"x": 1, "y": 2}}
    h = hole_bridge(original, refined, RUN, [2, 4, 10])
    assert h["q1"] == {"hole_bridge_at_2": 0.5, "hole_bridge_at_4": 0.5, "hole_bridge_at_10": 0.2}
    assert h["q2"] == {"hole_bridge_at_2": 0.0, "hole_bridge_at_4": 0.0, "hole_bridge_at_10": 0.0}


def test_ragalign_binary_and_pointbiserial():
    hit = {"q1": 1, "q2": 0, "q3": 1, "q4": 0}
    gen = {"q1": 1, "q2": 0, "q3": 0, "q4": 0, "q5": 1}
    r = ragalign_binary(hit, gen, "hit_rate_at_10")
    assert r.value == 0.75 and r.n == 4 and r.missing_generation == 0
    ndcg = {"q1": 0.9, "q2": 0.1, "q3": 0.5, "q4": 0.3, "q6": 0.2}
    pb = ragalign_pointbiserial(ndcg, gen, "ndcg_at_10")
    expected = stats.pointbiserialr([1, 0, 0, 0], [0.9, 0.1, 0.5, 0.3])
    assert pb.value == pytest.approx(expected.statistic) and pb.p_value == pytest.approx(expected.pvalue)
    assert pb.n == 4 and pb.missing_generation == 1
    # the seed's formula, by hand: (R1 - R0) / s_R * sqrt(n1 n0 / (n (n - 1)))
    values = np.array([0.9, 0.1, 0.5, 0.3])
    by_hand = (0.9 - values[1:].mean()) / values.std(ddof=1) * np.sqrt(1 * 3 / (4 * 3))
    assert pb.value == pytest.approx(by_hand)


def test_significance_matches_scipy_and_exact_enumeration():
    a = np.array([0.2, 0.5, 0.1, 0.9, 0.4, 0.3, 0.8, 0.6])
    b = np.array([0.4, 0.5, 0.3, 1.0, 0.3, 0.6, 0.9, 0.9])
    c = compare_paired("ndcg_at_10", a, b)
    t = stats.ttest_rel(b, a)
    assert c.t_statistic == pytest.approx(t.statistic) and c.t_p_value == pytest.approx(t.pvalue)
    d = b - a
    assert c.diff == pytest.approx(d.mean()) and c.effect_size == pytest.approx(d.mean() / d.std(ddof=1))
    # 2^8 sign flips enumerated by hand: the exact two-sided p-value
    observed = abs(d.mean())
    flips = [abs(np.mean(d * np.array(signs))) for signs in itertools.product([1, -1], repeat=len(d))]
    exact = sum(f >= observed - 1e-12 for f in flips) / len(flips)
    assert c.randomization_p_value == pytest.approx(exact)
    lo, hi = c.diff_ci95
    assert lo < d.mean() < hi
    assert randomization_test(a, a) == 1.0
    assert bootstrap_ci([0.5] * 5) == (0.5, 0.5)


def test_pool_analysis_five_runs_by_hand():
    original = {"q1": {"g1": 1}, "q2": {"g2": 1}}
    refined = {"q1": {"g1": 1, "h1": 1, "h2": 1}, "q2": {"g2": 1, "h3": 1}}

    def run(q1, q2):
        return {"q1": {d: 1.0 - i / 10 for i, d in enumerate(q1)}, "q2": {d: 1.0 - i / 10 for i, d in enumerate(q2)}}

    runs = {
        "A": run(["g1", "h1"], ["x", "y"]),
        "B": run(["h1", "z"], ["g2", "z"]),
        "C": run(["h2", "z"], ["h3", "g2"]),
        "D": run(["z", "w"], ["w", "z"]),
        "E": run(["g1", "z"], ["g2", "h3"]),
    }
    result = pool_analysis(runs, original, refined, k=2, metric="hit", orders=[["A", "B", "C", "D", "E"]])
    # |H(C_m)| = 1, 1, 3, 3, 3  ->  GR = -, 0, 2, 0, 0
    assert result.holes_per_size == [1, 1, 3, 3, 3]
    assert result.growth_rate == [None, 0.0, 2.0, 0.0, 0.0]
    # only C's q1 hit depends on a hole nobody else found (h2): Hit@2 1.0 with it, 0.5 without
    assert result.marginal_contribution == {"A": 0.0, "B": 0.0, "C": 0.5, "D": 0.0, "E": 0.0}
    assert result.marginal_contribution_by_size == [0.0, 0.5, 0.0, 0.0]
    assert result.total_holes == 3
    averaged = pool_analysis(runs, original, refined, k=2, metric="hit", n_orders=4, seed=1)
    assert len(averaged.orders) == 4 and averaged.marginal_contribution == result.marginal_contribution


@pytest.mark.slow
def test_batched_resampling_gives_scipy_s_one_shot_numbers():
    """bootstrap_ci/randomization_test draw resamples in batches (bounded memory); the numbers must be those
    of scipy's default single draw with the same seed."""
    rng = np.random.default_rng(3)
    x = rng.random(400)  # the batches are of resamples (10,000 in 40): any number of values shows a changed stream
    y = x + rng.normal(0.004, 0.1, 400)
    reference = stats.bootstrap(
        (x,), np.mean, n_resamples=10_000, method="percentile", vectorized=True, random_state=np.random.default_rng(0)
    ).confidence_interval
    assert bootstrap_ci(x) == (reference.low, reference.high)
    p = stats.permutation_test(
        (x, y),
        lambda u, v, axis: np.mean(u - v, axis=axis),
        permutation_type="samples",
        n_resamples=10_000,
        alternative="two-sided",
        vectorized=True,
        random_state=np.random.default_rng(0),
    ).pvalue
    assert randomization_test(x, y) == p
