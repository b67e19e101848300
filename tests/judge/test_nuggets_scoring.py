"""Nugget scores against hand computations and against nuggetizer's formula written again here, independently
(castorini/nuggetizer ``core/metrics.py``: support 1, partial_support 0.5 outside the strict scores, shares of the vital
or of all nuggets, 0.0 for a turn with no vital nugget, the run's score the mean over its answers)."""

from __future__ import annotations

import random
from statistics import mean

import pytest

from mtrbench.data import load_task, resolve_card
from mtrbench.judge.nuggets.aggregate import run_scores
from mtrbench.judge.nuggets.assignment_file import AssignedNugget
from mtrbench.judge.nuggets.scores import answer_scores, mean_scores


def nuggets(*pairs: tuple[str, str]) -> tuple[AssignedNugget, ...]:
    return tuple(AssignedNugget(f"n{i}", importance, assignment) for i, (importance, assignment) in enumerate(pairs))


MIXED = nuggets(
    ("vital", "support"),
    ("vital", "partial_support"),
    ("vital", "not_support"),
    ("okay", "support"),
    ("okay", "partial_support"),
)
NO_VITAL = nuggets(("okay", "support"), ("okay", "partial_support"))
FAILED = nuggets(("vital", "failed"), ("failed", "support"))


def test_scores_by_hand():
    # vital: 1 support, 1 partial of 3; all: 2 support, 2 partial of 5
    s = answer_scores(MIXED)
    assert (s.strict_vital, s.vital, s.strict_all, s.all) == pytest.approx((1 / 3, 1.5 / 3, 2 / 5, 3 / 5))


def test_a_turn_without_vital_nugget_scores_zero_on_the_vital_scores():
    s = answer_scores(NO_VITAL)
    assert (s.strict_vital, s.vital, s.strict_all, s.all) == (0.0, 0.0, 0.5, 0.75)
    assert answer_scores(()).as_dict() == {"strict_vital": 0.0, "vital": 0.0, "strict_all": 0.0, "all": 0.0}


def test_failed_labels_count_as_neither_vital_nor_supported():
    s = answer_scores(FAILED)  # the vital nugget's assignment failed; the supported one's importance failed
    assert (s.strict_vital, s.vital, s.strict_all, s.all) == (0.0, 0.0, 0.5, 0.5)


def nuggetizer_formula(records: list[dict]) -> tuple[list[dict], dict]:
    """nuggetizer's per-record and global metrics, written from its definition."""
    rows = []
    for record in records:
        labels = record["nuggets"]
        vital = [n for n in labels if n["importance"] == "vital"]

        def share(group, partial):
            got = [
                1.0 if n["assignment"] == "support" else partial if n["assignment"] == "partial_support" else 0.0
                for n in group
            ]
            return sum(got) / len(group) if group else 0.0

        rows.append(
            {
                "strict_vital_score": share(vital, 0.0),
                "vital_score": share(vital, 0.5),
                "strict_all_score": share(labels, 0.0),
                "all_score": share(labels, 0.5),
            }
        )
    return rows, {name: mean(r[name] for r in rows) for name in rows[0]}


def test_equals_nuggetizers_formula_on_random_assignments():
    rng = random.Random(33)
    records = []
    for qid in range(60):
        size = rng.randint(0, 8)
        records.append(
            {
                "qid": str(qid),
                "nuggets": [
                    {
                        "text": f"fact {i}",
                        "importance": rng.choice(["vital", "okay", "okay", "failed"]),
                        "assignment": rng.choice(["support", "partial_support", "not_support", "failed"]),
                    }
                    for i in range(size)
                ],
            }
        )
    expected_rows, expected_mean = nuggetizer_formula(records)
    ours = [
        answer_scores(tuple(AssignedNugget(n["text"], n["importance"], n["assignment"]) for n in r["nuggets"]))
        for r in records
    ]
    for got, want in zip(ours, expected_rows):
        assert got.strict_vital == pytest.approx(want["strict_vital_score"])
        assert got.vital == pytest.approx(want["vital_score"])
        assert got.strict_all == pytest.approx(want["strict_all_score"])
        assert got.all == pytest.approx(want["all_score"])
    means = mean_scores(ours)
    assert means["n"] == 60
    for name in ("strict_vital", "vital", "strict_all", "all"):
        assert means[name] == pytest.approx(expected_mean[f"{name}_score"])


def test_breakdowns_per_turn_switch_and_conversation():
    """geo-01 switches topic after turn 3 (turns 4-6 after the switch); geo-02 after turn 4."""
    queries = load_task(resolve_card("mtrbench-sample")).queries
    per_answer = {
        "geo-01_1": answer_scores(MIXED),  # all 0.6
        "geo-01_2": answer_scores(NO_VITAL),  # all 0.75
        "geo-01_4": answer_scores(FAILED),  # all 0.5, after the switch
        "geo-02_1": answer_scores(NO_VITAL),  # all 0.75
    }
    out = run_scores("r", per_answer, queries)
    assert out.scores["n"] == 4
    assert out.scores["all"] == pytest.approx((0.6 + 0.75 + 0.5 + 0.75) / 4)
    assert out.scores["vital"] == pytest.approx((0.5 + 0 + 0 + 0) / 4)
    assert out.by_turn["1"]["n"] == 2 and out.by_turn["1"]["all"] == pytest.approx((0.6 + 0.75) / 2)
    assert out.by_turn["2"]["all"] == pytest.approx(0.75)
    assert out.by_turn["4"]["strict_all"] == pytest.approx(0.5)
    assert set(out.by_turn) == {"1", "2", "4"}
    assert out.by_topic_switch["before_switch"]["n"] == 3
    assert out.by_topic_switch["before_switch"]["strict_all"] == pytest.approx((0.4 + 0.5 + 0.5) / 3)
    assert out.by_topic_switch["after_switch"] == {
        "n": 1,
        "strict_vital": 0.0,
        "vital": 0.0,
        "strict_all": 0.5,
        "all": 0.5,
    }
    assert out.by_conversation["geo-01"]["all"] == pytest.approx((0.6 + 0.75 + 0.5) / 3)
    assert out.by_conversation["geo-02"]["n"] == 1


def test_without_a_task_only_the_run_mean():
    out = run_scores("r", {"a": answer_scores(MIXED), "b": answer_scores(MIXED)})
    assert out.scores["strict_vital"] == pytest.approx(1 / 3)
    assert out.by_turn == {} and out.by_topic_switch is None and out.by_conversation == {}
