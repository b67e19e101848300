"""MTRAG's algorithmic metrics against the values IBM stored for its 477 evaluated responses, and against
hand-worked cases of the official formulas (``run_algorithmic.py``, ``judge_wrapper.get_idk_score``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mtrbench.judge.mtrag.aggregate import harmonic_mean_of_three, rb_agg
from mtrbench.judge.mtrag.conditioning import NO_ANSWER_EXPECTED, idk_conditioned, idk_underspecified_conditioned
from mtrbench.judge.mtrag.lexical import extractiveness_rouge, length, rouge_l, token_recall
from mtrbench.judge.mtrag.summary import harmonic_mean, summarize

DATA = Path(__file__).resolve().parents[1] / "data" / "mtrag_eval"


@pytest.fixture(scope="module")
def responses():
    rows = [json.loads(line) for line in (DATA / "reference_subset.jsonl").read_text().splitlines()]
    assert len(rows) == 477 and {r["model_id"] for r in rows} == {"reference", "gpt-4o", "llama-3.1-405b-instruct"}
    return rows


def test_rouge_l_equals_the_stored_value_for_all_477_responses(responses):
    for row in responses:
        assert rouge_l(row["response"], row["target"]) == pytest.approx(row["RougeL"], abs=1e-12), row["task_id"]


def _idk_verdict(row) -> float:
    """The idk_eval verdict behind the stored conditional_idk (1 = the response's idk behaviour was right): on
    an unanswerable or conversational turn right means it said "I don't know"; on any other turn, that it did not."""
    return (
        float(row["conditional_idk"])
        if row["answerability"] in NO_ANSWER_EXPECTED
        else 1.0 - float(row["conditional_idk"])
    )


def test_rb_agg_with_idk_conditioning_reproduces_every_stored_value(responses):
    naive_differs = 0
    for row in responses:
        metrics = {
            "BertscoreR": [row["BertscoreR"]],
            "RougeL_stemFalse": [row["RougeL"]],
            "BertKPrec": [row["BertKPrec"]],
            "Recall": [0.0],
        }
        plain = rb_agg(metrics)
        conditioned = idk_conditioned(plain, row["answerability"], _idk_verdict(row))
        assert conditioned == pytest.approx(row["rb_agg"], abs=1e-12), row["task_id"]
        naive_differs += abs(plain - row["rb_agg"]) > 1e-9
    assert naive_differs == 32  # the count: the conditioning is what makes the difference


def test_rb_agg_formula_and_its_official_fallbacks():
    a, b, c = (0.6 + 1) / 2, 0.5, (0.2 + 1) / 2
    expected = 3 * a * b * c / (a * b + a * c + b * c)
    assert rb_agg({"BertscoreR": [0.6], "RougeL_stemFalse": [0.5], "BertKPrec": [0.1, None, 0.2]}) == pytest.approx(
        expected
    )
    # no BertscoreR: the token Recall stands in for a
    assert rb_agg({"Recall": [0.8], "RougeL_stemFalse": [0.5], "BertKPrec": [0.2]}) == pytest.approx(
        harmonic_mean_of_three(0.8, 0.5, 0.6)
    )
    assert rb_agg({"BertscoreR": [0.6], "RougeL_stemFalse": [0.5]}) == 0  # no passage: c = 0
    assert rb_agg({"BertscoreR": [0.6], "RougeL_stemFalse": [0.0], "BertKPrec": [0.9]}) == 0
    assert rb_agg({"BertscoreR": [-1.0], "RougeL_stemFalse": [0.4], "BertKPrec": [0.9]}) == 0  # a = (-1+1)/2


def test_token_recall_is_normalized_multiset_overlap_over_the_target():
    # target tokens after normalization: cat sat on mat (articles and punctuation gone) -> 4
    assert token_recall("A cat, a CAT!", "The cat sat on the mat.") == pytest.approx(1 / 4)
    assert token_recall("cat sat sat", "sat sat sat cat") == pytest.approx(3 / 4)
    assert token_recall("nothing shared", "cat") == 0


def test_extractiveness_is_one_for_a_copied_passage_else_rouge_l():
    passage = "The museum opens at 9 a.m.\non weekdays."
    assert extractiveness_rouge("Good news: the museum opens at 9 am on weekdays, so go early.", passage) == 1
    answer = "The museum closes at noon."
    # after cleaning: "the museum closes at noon" vs "the museum opens at 9 am on weekdays": LCS 3 (the museum at)
    p, r = 3 / 5, 3 / 8
    assert extractiveness_rouge(answer, passage) == pytest.approx(2 * p * r / (p + r))
    assert length("héllo") == 5


@pytest.mark.parametrize(
    "answerability,idk,clarification,value,expected,expected_underspecified",
    [
        ("UNANSWERABLE", 1, 0, 0.3, 1, 1),
        ("UNANSWERABLE", 0.5, 0, 0.3, 0, 0),
        ("CONVERSATIONAL", 0, 0, 0.3, 0, 0),
        ("UNANSWERABLE", None, 0, 0.3, 0.3, 0.3),  # the official "unknown" matches no branch
        ("ANSWERABLE", 1, 0, 0.3, 0, 0),
        ("PARTIAL", 0.5, 0, 0.3, 0.3, 0.3),
        ("ANSWERABLE", 0, 1, 0.3, 0.3, 0.3),
        ("UNDERSPECIFIED", 0, 1, 0.3, 0.3, 1),
        ("UNDERSPECIFIED", 1, 0.5, 0.3, 0, 0),
    ],
)
def test_conditioning_follows_the_official_branches(
    answerability, idk, clarification, value, expected, expected_underspecified
):
    assert idk_conditioned(value, answerability, idk) == expected
    assert idk_underspecified_conditioned(value, answerability, idk, clarification) == expected_underspecified


def test_task_c_harmonic_mean_matches_h_rag_and_summary_groups_by_class():
    assert round(harmonic_mean([0.2488, 0.2703, 0.6508]), 4) == 0.3241  # H-RAG's reported Task C score
    summary = summarize(
        [
            ("ANSWERABLE", {"RB_agg": [0.4], "RL_F": [0.5], "RB_llm": [0.8], "BertKPrec": [0.2, 0.4]}),
            ("ANSWERABLE", {"RB_agg": [0.2], "RL_F": [math.nan], "RB_llm": [0.6], "BertKPrec": [0.0]}),
            ("UNANSWERABLE", {"RB_agg": [0.0], "RL_F": [1.0], "RB_llm": [0.4]}),
        ]
    )
    assert summary["per_class_instances"] == {"ANSWERABLE": 2, "UNANSWERABLE": 1}
    assert summary["means"]["ANSWERABLE"]["RB_agg"] == pytest.approx(0.3)
    assert summary["means"]["ANSWERABLE"]["RL_F"] == pytest.approx(0.5)  # NaN left out
    assert summary["means"]["ANSWERABLE"]["BertKPrec"] == pytest.approx((0.3 + 0.0) / 2)
    assert summary["values_left_out"] == {"RL_F": 1}
    overall = summary["means"]["all"]
    assert overall["RB_agg"] == pytest.approx(0.2) and overall["RL_F"] == pytest.approx(0.75)
    assert summary["harmonic_means"]["HM(RB_agg, RL_F, RB_llm)"] == pytest.approx(3 / (1 / 0.2 + 1 / 0.75 + 1 / 0.6))
