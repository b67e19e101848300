"""The readers of MTRAG's LLM judges' replies. Expected values were worked by hand through the official
functions (``judge_utils.extract_rating``, ``first_token_idk``, ``judge_wrapper.extract_and_format_json``):
each pattern of the rating cascade that matches overwrites the value, so the last matching one wins."""

from __future__ import annotations

import math

import pytest

from mtrbench.judge.mtrag.faithfulness import faithfulness_score, parse_statements, parse_verdicts
from mtrbench.judge.mtrag.rating import median, rb_llm_rating
from mtrbench.judge.mtrag.verdicts import clarification_verdict, idk_verdict
from mtrbench.llm.extract import ExtractionError

RATINGS = [
    ("The answer is faithful to the document and complete.\nRating: [[8]]", 0.8),
    ("Rating: 7", 0.7),
    ("Rating: [[8.5]]", 0.85),  # only the decimal patterns match
    ("All things considered I'd give it 6 out of 10.", 0.6),
    ("Score: 8.6/10", 0.86),
    ("Rating: [[7/10]]", 0.7),
    ("Rating: [[10]]", 1.0),
    ("rating: [[4]]", 0.4),  # patterns ignore case
    ("Overall Rating: 9", 0.9),
    ("[Rating]\n7", 0.7),
    ("Rating: [[0]]", 0.5),  # out of (0, 1]: fallback
    ("Rating: [[11]]", 0.5),
    ("Rating: [[-3]]", 0.5),
    ("The assistant did well but I will not give a number.", 0.5),
    (None, 0.5),
    # the prompt's example, echoed, is cut from "for example:" to the end of its line
    ('Format: "Rating: [[rating]]", for example: "Rating: [[2]]".\nRating: [[9]]', 0.9),
    # the last matching pattern wins: "out of 10" comes last in the cascade
    ("Rating: [[8]]\nOn completeness alone it is 4 out of 10.", 0.4),
    # a citation [2] is read by the "[n]" pattern, then overwritten by the later "Rating: [[" patterns
    ("The answer cites [2] and [3] correctly. Rating: [[6]]", 0.6),
    ("The answer cites [2] correctly; overall it deserves a 7.", 0.2),
]


@pytest.mark.parametrize("reply,expected", RATINGS)
def test_rb_llm_cascade_reads_replies_as_the_official_function(reply, expected):
    assert rb_llm_rating(reply) == pytest.approx(expected)


@pytest.mark.parametrize(
    "reply, expected",
    [
        # every pattern that matches gives its FIRST match (the official ``matches[0]``), never a later one
        ("Rating: [[3]]\nOn reflection the answer is better than that. Rating: [[8]]", 0.3),
        ("Rating: 2\nRating: 9", 0.2),
        ("Score: 4/10 at first; Score: 7/10 after a second read.", 0.4),
    ],
)
def test_rb_llm_takes_the_first_rating_of_a_reply_that_gives_several(reply, expected):
    assert rb_llm_rating(reply) == pytest.approx(expected)


def test_median_over_judges_is_numpys():
    assert median([0.8, 0.6]) == pytest.approx(0.7)
    assert median([0.5, 0.9, 0.1]) == 0.5


@pytest.mark.parametrize(
    "reply,expected",
    [
        ("Yes.", 1.0),
        ("  no", 0.0),
        ("Partial", 0.5),
        ("Maybe, partly", 0.5),
        ("NO - it answers", 0.0),
        ("**yes**", None),
        ("1", None),
        ("", None),
        (None, None),
    ],
)
def test_idk_reads_the_first_word(reply, expected):
    assert idk_verdict(reply) == expected


@pytest.mark.parametrize(
    "reply,expected",
    [
        ('```json\n{"decision": "Yes", "explanation": "asks which account"}\n```', 1.0),
        ('Here it is: {"decision": "no", "explanation": "answers"}', 0.0),
        ('{"decision": "unsure"}', 0.5),
        ("decision: yes", 0.5),  # no JSON object at all
        ('{"decision": yes}', 0.5),  # not JSON
        ('{"decision": "yes", "explanation": "path C:\\data"}', 1.0),  # a stray backslash is dropped
        ('{"decision": true}', 0.5),
    ],
)
def test_clarification_reads_the_json_decision(reply, expected):
    assert clarification_verdict(reply) == expected


def test_faithfulness_is_ragas_supported_over_verdicts():
    assert parse_statements('{"statements": ["A is B.", "C is D.", " "]}') == ["A is B.", "C is D."]
    verdicts = parse_verdicts(
        '```json\n{"statements": [{"statement": "A", "reason": "r", "verdict": 1}, '
        '{"statement": "B", "reason": "r", "verdict": 0}, '
        '{"statement": "C", "reason": "r", "verdict": "1"}]}\n```'
    )
    assert verdicts == [1, 0, 1]
    assert faithfulness_score(verdicts) == pytest.approx(2 / 3)  # ragas: sum(1 if verdict) / len(verdicts)
    assert math.isnan(faithfulness_score([])) and math.isnan(faithfulness_score(None))
    with pytest.raises(ExtractionError):
        parse_verdicts('{"statements": [{"statement": "A", "verdict": "maybe"}]}')
    with pytest.raises(ExtractionError):
        parse_statements('{"claims": 3}')
