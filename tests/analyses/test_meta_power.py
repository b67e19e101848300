"""Discriminative power and its paired tests, checked against scipy, pytrec_eval and brute force."""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from scipy import stats

from mtrbench.analyses.meta.inputs import InputSpec, ScoreMatrix
from mtrbench.analyses.meta.power import discriminative_power
from mtrbench.analyses.meta.tests import Resampling, Units, tukey_hsd
from mtrbench.results.systems import load_matrices

CAST = Path(__file__).resolve().parents[1] / "data" / "meta" / "cast2021"
RUNS = sorted(CAST.glob("*.run.gz"))
QRELS = CAST / "trec-cast-qrels-docs.2021.qrel.gz"


def _read(path: Path, fields: int) -> list[list[str]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [line.split() for line in handle if len(line.split()) == fields]


@pytest.fixture(scope="module")
def cast_ndcg3() -> dict[str, dict[str, float]]:
    """Run name -> qid -> nDCG@3 straight from pytrec_eval, on the judged queries with a relevant document."""
    qrels: dict[str, dict[str, int]] = {}
    for qid, _, doc, grade in _read(QRELS, 4):
        qrels.setdefault(qid, {})[doc] = int(grade)
    qrels = {q: docs for q, docs in qrels.items() if any(g > 0 for g in docs.values())}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.3"})
    values = {}
    for path in RUNS:
        run: dict[str, dict[str, float]] = {}
        for qid, _, doc, _, score, _ in _read(path, 6):
            run.setdefault(qid, {})[doc] = float(score)
        values[path.name.split(".")[0]] = {q: v["ndcg_cut_3"] for q, v in evaluator.evaluate(run).items()}
    return values


@pytest.fixture(scope="module")
def cast_matrix() -> ScoreMatrix:
    spec = InputSpec(runs=tuple(map(str, RUNS)), qrels=str(QRELS), relevance_level=2)
    (matrix,) = load_matrices(spec, ["nDCG@3"])
    return matrix


def test_cast_2021_t_test_p_values_are_scipy_ttest_rel_on_pytrec_eval_ndcg3(cast_ndcg3, cast_matrix):
    report = discriminative_power(cast_matrix, Resampling(test="t", unit="query"))
    queries = sorted(next(iter(cast_ndcg3.values())))
    assert len(RUNS) == 5 and list(cast_matrix.queries) == queries and len(queries) > 100
    assert len(report.pairs) == 10
    expected_significant = 0
    for pair in report.pairs:
        a = [cast_ndcg3[pair.a][q] for q in queries]
        b = [cast_ndcg3[pair.b][q] for q in queries]
        p = stats.ttest_rel(a, b).pvalue
        assert pair.p == pytest.approx(p, rel=1e-9, abs=1e-15)
        assert pair.diff == pytest.approx(np.mean(a) - np.mean(b), abs=1e-12)
        expected_significant += p < 0.05
    assert report.significant_pairs == expected_significant
    assert report.discriminative_power == expected_significant / 10
    assert 0 < expected_significant < 10  # the real runs have both kinds of pairs


def test_cast_2021_conversations_come_from_the_turn_ids(cast_matrix):
    # CAsT 2021 ids are `<topic>_<turn>`: 158 judged turns of 18+ topics
    assert set(cast_matrix.conversations) == {q.rsplit("_", 1)[0] for q in cast_matrix.queries}
    assert (
        len(set(cast_matrix.conversations)) == Units.of(cast_matrix.scores, cast_matrix.unit_groups("conversation")).n
    )


def _brute_force_tukey(scores: np.ndarray, groups: list[int]) -> np.ndarray:
    """Every assignment of one permutation of the systems per group, counted with plain loops."""
    m, n = scores.shape
    members = {g: [j for j in range(n) if groups[j] == g] for g in sorted(set(groups))}
    observed = scores.mean(axis=1)
    counts = np.zeros((m, m))
    total = 0
    for choice in itertools.product(itertools.permutations(range(m)), repeat=len(members)):
        permuted = np.empty_like(scores)
        for order, queries in zip(choice, members.values()):
            for j in queries:
                for i in range(m):
                    permuted[i, j] = scores[order[i], j]
        means = permuted.mean(axis=1)
        spread = means.max() - means.min()
        total += 1
        for i in range(m):
            for k in range(m):
                if spread >= abs(observed[i] - observed[k]) - 1e-12:
                    counts[i, k] += 1
    return counts / total


def test_randomized_tukey_hsd_equals_brute_force_over_every_permutation():
    scores = np.array([[0.9, 0.7, 0.8], [0.5, 0.6, 0.4], [0.1, 0.3, 0.5]])
    expected = _brute_force_tukey(scores, [0, 1, 2])  # 6^3 = 216 assignments
    asl, exact = tukey_hsd(Units.of(scores, np.arange(3)), samples=216, seed=0)
    assert exact
    np.testing.assert_allclose(asl, expected, rtol=0, atol=1e-12)
    assert 0 < expected[0, 2] < expected[0, 1] < 1
    # Monte Carlo draws approach the exact values
    drawn, exact = tukey_hsd(Units.of(scores, np.arange(3)), samples=200, seed=0)
    assert not exact and np.abs(drawn - expected).max() < 0.1


def test_tukey_hsd_by_conversation_permutes_whole_conversations_as_brute_force_does():
    scores = np.array([[0.9, 0.8, 0.6, 0.7, 0.3], [0.4, 0.5, 0.6, 0.2, 0.1], [0.2, 0.1, 0.5, 0.4, 0.0]])
    conversations = ("c1", "c1", "c2", "c2", "c3")
    matrix = ScoreMatrix(
        "toy", "ndcg_at_3", ("s1", "s2", "s3"), tuple(f"q{i}" for i in range(5)), conversations, scores
    )
    report = discriminative_power(matrix, Resampling(test="tukey-hsd", unit="conversation", samples=216))
    expected = _brute_force_tukey(scores, [0, 0, 1, 1, 2])
    assert report.exact and report.units == 3
    assert [p.p for p in report.pairs] == pytest.approx([expected[0, 1], expected[0, 2], expected[1, 2]], abs=1e-12)
    # with every query free to move, the same data is separated more often
    by_query = discriminative_power(matrix, Resampling(test="tukey-hsd", unit="query", samples=6**5))
    assert by_query.pairs[1].p < report.pairs[1].p


def _matrix(scores: np.ndarray, per_conversation: int = 1) -> ScoreMatrix:
    n = scores.shape[1]
    return ScoreMatrix(
        "toy",
        "ndcg_at_3",
        tuple(f"s{i}" for i in range(len(scores))),
        tuple(f"q{j}" for j in range(n)),
        tuple(f"c{j // per_conversation}" for j in range(n)),
        scores,
    )


def test_bootstrap_asl_vanishes_for_a_large_difference_and_stays_high_without_one():
    rng = np.random.default_rng(5)
    base = rng.uniform(0.1, 0.5, size=40)
    symmetric = np.repeat(rng.uniform(0.05, 0.2, size=20), 2) * np.tile([1, -1], 20)  # mean exactly 0
    scores = np.vstack([base + 0.4 + rng.normal(0, 0.02, 40), base, base + symmetric, base.copy()])
    report = discriminative_power(_matrix(scores), Resampling(test="bootstrap", unit="query", samples=400, seed=1))
    asl = {(p.a, p.b): p.p for p in report.pairs}
    assert asl[("s0", "s1")] == 0.0
    assert asl[("s1", "s2")] > 0.5
    assert asl[("s1", "s3")] == 1.0  # identical systems


def test_randomization_reuses_the_sign_flip_test_and_is_exact_when_it_can_be():
    scores = np.array([[0.5, 0.6, 0.7, 0.9], [0.4, 0.5, 0.6, 0.5]])
    report = discriminative_power(_matrix(scores), Resampling(test="randomization", unit="query", samples=100))
    # all 16 sign flips: |sum| >= 0.5 only for the observed assignment and its mirror
    assert report.exact and report.pairs[0].p == pytest.approx(2 / 16)


def _correlated_task(seed: int = 11) -> ScoreMatrix:
    """Five systems on 12 conversations of 6 turns; a system's advantage varies by conversation, hardly by turn."""
    rng = np.random.default_rng(seed)
    systems, conversations, turns = 5, 12, 6
    base = 0.40 + 0.03 * np.arange(systems)
    per_conversation = rng.normal(0, 0.12, size=(systems, conversations))
    per_turn = rng.normal(0, 0.02, size=(systems, conversations, turns))
    scores = (base[:, None, None] + per_conversation[:, :, None] + per_turn).reshape(systems, -1)
    return _matrix(scores, per_conversation=turns)


@pytest.mark.parametrize("test", ["t", "bootstrap", "randomization"])
def test_turn_level_resampling_overstates_power_on_correlated_turns(test):
    matrix = _correlated_task()
    by_turn = discriminative_power(matrix, Resampling(test=test, unit="query", samples=300, seed=0))
    by_conversation = discriminative_power(matrix, Resampling(test=test, unit="conversation", samples=300, seed=0))
    assert by_turn.units == 72 and by_conversation.units == 12
    assert by_turn.discriminative_power > by_conversation.discriminative_power
    # the whole ASL curve sits lower when turns are (wrongly) treated as independent
    assert np.mean(by_turn.asl_curve) < np.mean(by_conversation.asl_curve) - 0.05


def test_t_test_by_conversation_is_ttest_rel_on_conversation_means_when_they_have_equal_turns():
    # the cluster-robust standard error over equal-size conversations reduces to the paired t-test of the
    # conversations' means, with conversations - 1 degrees of freedom
    matrix = _correlated_task()
    report = discriminative_power(matrix, Resampling(test="t", unit="conversation"))
    by_conversation = matrix.scores.reshape(len(matrix.systems), 12, 6).mean(axis=2)
    for pair in report.pairs:
        a, b = matrix.systems.index(pair.a), matrix.systems.index(pair.b)
        assert pair.p == pytest.approx(stats.ttest_rel(by_conversation[a], by_conversation[b]).pvalue, rel=1e-9)
