"""The shared leniency policy (mtrbench.llm.replies, docs/llm-judges.md "Which replies are accepted").

First the policy's table, each row decided by hand from the documented rules; then real SmolLM2-135M-Instruct
replies to mtrbench's own prompts (tests/data/llm_replies/smollm2_replies.jsonl), each with a hand-decided
expected outcome, parsed by the same functions the commands use.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtrbench.assess.prompts import parse_support
from mtrbench.assess.prompts import parse_verdict as parse_assess_verdict
from mtrbench.audit.prompts import parse_rating as parse_audit_rating
from mtrbench.generation.prompts import parse_model_history
from mtrbench.judge.prompts import parse_rating, parse_verdict
from mtrbench.llm.replies import ExtractionError, extract_line, extract_verdict, extract_yes_no
from mtrbench.synthesize.prompts import parse_polished, parse_question

REPLIES = Path(__file__).resolve().parents[1] / "data" / "llm_replies" / "smollm2_replies.jsonl"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Rating: [[7]]", 7),
        ("**Rating:** 7", 7),
        ("Score = 7/10", 7),
        ("[Rating]\n7", 7),  # an MTRAG RB_llm cascade pattern
        ("Rating: [[7/10]]", 7),  # another
        ("Overall Rating: 7", 7),
        ("All in all 7 out of 10.", 7),
        ("Rating: 2\n\nThe Statue of Liberty was dedicated in 1886.", 2),  # unrelated text after a labelled value
        ("A [[2]] would be harsh; weighing it all, Rating: [[6]]", 6),
        ('Here is my rating: {"rating": 4}. Hope it helps', 4),
        ('```json\n{"rating": "4"}\n```', 4),
    ],
)
def test_ratings_accepted(text, expected):
    assert parse_rating(text) == expected


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "empty"),
        ("Rating: [[12]]", "outside"),
        ("The response is good.", "no rating"),
        ("Rating: [[rating]]", "no rating"),
        ("Compare [2] with [4]", "ambiguous"),
        ("It scores 7 out of 20.", "no rating"),  # another scale than the one asked
    ],
)
def test_ratings_rejected(text, reason):
    with pytest.raises(ExtractionError, match=reason):
        parse_rating(text)


def test_a_rating_on_another_scale_is_rejected_not_clamped():
    with pytest.raises(ExtractionError, match="outside"):
        parse_audit_rating("Rating: 7")  # audit's scale is 1-5


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Verdict: [[CORRECT]]", 1),
        ("Verdict: [CORRECT]", 1),  # rejected before the shared policy
        ("**Verdict:** CORRECT", 1),
        ("[INCORRECT]", 0),
        ('{"verdict": "incorrect"}', 0),
        ("Correct. It says 1889, as the reference does.", 1),
        ("Incorrect: the reference says 1889.", 0),
        ("It could be called INCORRECT at first sight, but Verdict: [[CORRECT]]", 1),
        ("Verdict: [[INCORRECT]]\nRating: 7", 0),
        ("Verdict: [[CORRECT]] at first sight.\nOn reflection: Verdict: [[INCORRECT]]", 0),  # the last line settles
    ],
)
def test_verdicts_accepted(text, expected):
    assert parse_verdict(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "The answer is correct.",
        "I think it is fine",
        "Verdict: maybe",
        "Verdict: [[CORRECT]] or maybe\nVerdict: [[INCORRECT]] [[CORRECT]]",
        "Correct or incorrect, hard to say.",
        '{"verdict": "partly"}',
    ],
)
def test_verdicts_rejected(text):
    with pytest.raises(ExtractionError):
        parse_verdict(text)


def test_yes_no_and_words_follow_the_same_label_grammar():
    assert extract_yes_no("**Decision:** [no]") is False
    assert extract_yes_no("Answer = 'yes' because the passage says so") is True
    assert extract_verdict("Judgment - [[PASS]]", "PASS", "FAIL") is True
    with pytest.raises(ExtractionError):
        extract_yes_no("The passage never says yes outright.")  # neither labelled nor the first word


def test_json_replies_of_assess_accept_fences_and_prose():
    verdict = parse_assess_verdict('Sure.\n```json\n{"reference": [], "reason": "states it", "response": "Yes"}\n```')
    assert verdict.relevant is True and verdict.reason == "states it"
    assert parse_support('{"is_supported": false} as asked') is False
    with pytest.raises(ValueError):
        parse_support("supported")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Rewrite: When was the Eiffel Tower finished?", "When was the Eiffel Tower finished?"),
        ('**Rewrite:** "When was the Eiffel Tower finished?"', "When was the Eiffel Tower finished?"),
        ("Sure, here it is.\nRewrite: When was it finished?", "When was it finished?"),
        ("When was the Eiffel Tower finished?", "When was the Eiffel Tower finished?"),
    ],
)
def test_one_line_texts(text, expected):
    assert extract_line(text, "rewrite", "rewrite") == expected
    assert parse_model_history("rewrite", text) == expected  # eval's rewriter agrees


def test_one_line_texts_rejected():
    for parse in (lambda t: extract_line(t, "rewrite", "rewrite"), parse_polished):
        with pytest.raises(ExtractionError, match="several lines"):
            parse("When was it finished?\nThis keeps the meaning of the question.")
        with pytest.raises(ExtractionError):
            parse("   ")


def _rows() -> list[dict]:
    return [json.loads(line) for line in REPLIES.read_text(encoding="utf-8").splitlines() if line.strip()]


def _parser(kind: str):
    return {
        "rating": parse_rating,
        "verdict": parse_verdict,
        "rewrite": lambda text: parse_model_history("rewrite", text),
        "agent_questioner": lambda text: parse_question(text, 2),
        "agent_polisher": parse_polished,
    }[kind]


def test_the_fixture_names_its_model_and_prompts():
    rows = _rows()
    assert {r["kind"] for r in rows} == {"rating", "verdict", "rewrite", "agent_questioner", "agent_polisher"}
    for row in rows:
        assert row["model"].startswith("SmolLM2-135M-Instruct") and row["messages"][-1]["role"] == "user"
        assert row["id"] in EXPECTED, f"{row['id']} has no hand-decided outcome"


# Hand-decided from reading each reply: a value when the policy must accept it, None when it must refuse it.
EXPECTED: dict[str, object] = {
    "rating-00": None,  # restates the answer: no rating in any form (1889 is neither labelled nor bracketed)
    "verdict-01": None,  # restates the answer: neither CORRECT nor INCORRECT
    "verdict-02": None,  # copies the context and a block marker
    "rewrite-03": "The Eiffel Tower was finished in 1889.",  # one line: accepted as written (it answers
    # rather than rewrites: a content error no format policy can see)
    "agent_questioner-04": None,  # a preamble before the [Document 1] label, then a statement, not a question
    "agent_polisher-05": None,  # echoes the prompt over several lines, its "Rewritten:" line empty
    "rating-06": None,  # praise, no rating
    "verdict-07": None,  # "The answer is not correct": no verdict label; "correct" must not be read as CORRECT
    "verdict-08": None,  # a story, no verdict
    "rewrite-09": None,  # several lines; "The stand-alone question:" and "Fully rewritten:" do not start lines
    # with a label, so no line says which one is the rewrite
    "agent_questioner-10": None,  # no [Document N] label at all
    "agent_polisher-11": None,  # imitates the prompt over several lines; no line starts with "Rewritten:"
}


@pytest.mark.parametrize("row", _rows(), ids=lambda r: r["id"])
def test_real_small_model_replies(row):
    expected = EXPECTED[row["id"]]
    parse = _parser(row["kind"])
    if expected is None:
        with pytest.raises(ExtractionError):
            parse(row["reply"])
    else:
        value = parse(row["reply"])
        assert (value.position, value.text) == expected if row["kind"] == "agent_questioner" else value == expected
