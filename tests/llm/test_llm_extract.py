"""Reply extraction: the real RAD-Bench GPT-4o judgments, then tricky hand-made replies."""

from __future__ import annotations

import json
import re

import pytest

from mtrbench.llm.extract import ExtractionError, extract_choice, extract_json, extract_rating, extract_yes_no


def _rad_bench(shared):
    folder = shared / "datasets" / "real" / "rad-bench"
    records = [
        json.loads(line) for line in (folder / "model_judgment_sample.jsonl").read_text().splitlines() if line.strip()
    ]
    scales = {}
    for line in (folder / "judge_prompts.jsonl").read_text().splitlines():
        prompt = json.loads(line)
        found = re.findall(r"scale of (\d+) to (\d+)", prompt["system_prompt"] + prompt["prompt_template"])
        assert len(set(found)) == 1, prompt["name"]
        scales[prompt["name"]] = tuple(float(v) for v in found[0])
    return records, scales


def test_every_real_gpt4o_judgment_gives_its_recorded_score(shared):
    records, scales = _rad_bench(shared)
    assert len(records) == 60
    for record in records:
        low, high = scales[record["judge"][1]]  # the prompt the judgment answered states its scale (1 to 10)
        where = f"{record['question_id']} turn {record['turn']}"
        if record["score"] == -1:  # RAD-Bench's marker for an unparsable judgment
            with pytest.raises(ExtractionError):
                extract_rating(record["judgment"], low, high)
        else:
            assert extract_rating(record["judgment"], low, high) == record["score"], where


def test_real_judgments_still_parse_without_double_brackets(shared):
    # A judge that ignores the [[ ]] format but still writes "Rating: 7" must give the same score.
    records, _ = _rad_bench(shared)
    for record in records:
        plain = re.sub(r"\[\[(\d+)\]\]", r"\1", record["judgment"])
        assert "[[" not in plain
        assert extract_rating(plain, 1, 10) == record["score"], record["question_id"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Rating: [[7]]", 7),
        ("[[7]]", 7),
        ("[[7.5]]", 7.5),
        ("[[ 3 ]]", 3),
        ("The answer covers 3 of the 5 points, cites 2 sources.\n\nRating: [[4]]", 4),
        ("A [[2]] would be too harsh; after weighing everything, Rating: [[6]]", 6),  # the verdict comes last
        ('Rating: "[[rating]]" is the format. Rating: [[8]]', 8),
        ("Rating: <FINAL>[[4]]</FINAL>", 4),
        ("Rating: 4", 4),
        ("Overall, the response deserves a rating of 6.", 6),
        ("****Rating:**** 2", 2),
        ("**Score:** 9/10", 9),
        ('{"score": 4}', 4),
        ('{"Rating": "5"}', 5),
        ('Here is my verdict:\n```json\n{"reason": "mostly supported", "score": 3}\n```', 3),
        ("My rating is [9].", 9),
        ("5", 5),
        ("  3.  ", 3),
    ],
)
def test_extract_rating_accepts(text, expected):
    assert extract_rating(text, 1, 10) == expected


@pytest.mark.parametrize(
    "text, low, high, reason",
    [
        ("Rating: [[12]]", 1, 10, "outside"),
        ("Rating: [[0]]", 1, 10, "outside"),
        ("Rating: [[7]]", 1, 5, "outside"),  # a 1-10 answer to a 1-5 question is a failure, not a 5
        ('{"score": 6}', 1, 5, "outside"),
        ("Rating: [[rating]]", 1, 10, "no rating"),
        ("The response is good.", 1, 10, "no rating"),
        ("", 1, 10, "empty"),
        ('{"score": "high"}', 1, 5, "not a number"),
        ("Compare [2] with [4] for details", 1, 5, "ambiguous"),
    ],
)
def test_extract_rating_refuses(text, low, high, reason):
    with pytest.raises(ExtractionError, match=reason):
        extract_rating(text, low, high)


def test_extraction_error_is_a_value_error():
    assert issubclass(ExtractionError, ValueError)


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"response": "yes"}', {"response": "yes"}),
        ("  [1, 2, 3] ", [1, 2, 3]),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('Sure! Here it is:\n```\n{"a": [1, 2]}\n```\nHope this helps.', {"a": [1, 2]}),
        (
            'After reading [1] and [2], my answer is {"response": "no", "reason": "a } inside a string"} .',
            {"response": "no", "reason": "a } inside a string"},
        ),
        ('Answer: [{"doc": 1}, {"doc": 2}] done', [{"doc": 1}, {"doc": 2}]),
        ('{"outer": {"inner": [1, {"x": null}]}} trailing {"second": 2}', {"outer": {"inner": [1, {"x": None}]}}),
    ],
)
def test_extract_json_accepts(text, expected):
    assert extract_json(text) == expected


@pytest.mark.parametrize("text", ["no json here", '{"a": 1', "```json\n{broken\n```", ""])
def test_extract_json_refuses(text):
    with pytest.raises(ExtractionError):
        extract_json(text)


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"reference": ["s1"], "reason": "no match in scope", "response": "no"}', False),
        ('{"reference": [], "reason": "states the rule", "response": "Yes"}', True),
        ('```json\n{"response": "yes"}\n```', True),
        ('{"relevant": true}', True),
        ("Yes.", True),
        ("**No**", False),
        ("No, the chunk only mentions the topic.", False),
        ("The chunk lacks the key date.\nFinal answer: no", False),
        ("Reasoning: there is no overlap in scope... Response: yes", True),
    ],
)
def test_extract_yes_no_accepts(text, expected):
    assert extract_yes_no(text) is expected


@pytest.mark.parametrize(
    "text",
    [
        "Yes and no.",
        "Maybe, it depends.",
        '{"response": "partially"}',
        '{"reason": "no response field"}',
        "It is not clear; yes in part, no overall",
    ],
)
def test_extract_yes_no_refuses(text):
    with pytest.raises(ExtractionError):
        extract_yes_no(text)


MTR_STYLE_ANSWER = """****Justification:****

Document [1] is the only document that discusses the Eiffel Tower. Documents [2] and [3] describe the
Statue of Liberty and Big Ben.

****Document ID:****

[1]"""


@pytest.mark.parametrize(
    "text, n, expected",
    [
        ("[Document 3]", 10, 3),
        ("[3]", 10, 3),
        ("Document 3", 10, 3),
        ("3", 10, 3),
        ('{"document": 3}', 10, 3),
        ('{"document_id": "[Document 7]"}', 10, 7),
        ("[Document 10]", 10, 10),
        (MTR_STYLE_ANSWER, 3, 1),  # the labelled answer wins over documents discussed earlier
        ("I compared [1] with [2].\n[2]", 3, 2),  # unlabelled candidates: the final line decides
        ("Document ID: 4", 5, 4),
    ],
)
def test_extract_choice_accepts(text, n, expected):
    assert extract_choice(text, n) == expected


@pytest.mark.parametrize(
    "text, n, reason",
    [
        ("Document 12", 10, "outside"),
        ("[Document 0]", 10, "outside"),
        ('{"document": 11}', 10, "outside"),
        ("Document [1] and Document [3] both mention it", 3, "ambiguous"),
        ("None of the documents answers it.", 3, "no document"),
        ('{"document": "the first one"}', 3, "not a document number"),
    ],
)
def test_extract_choice_refuses(text, n, reason):
    with pytest.raises(ExtractionError, match=reason):
        extract_choice(text, n)
