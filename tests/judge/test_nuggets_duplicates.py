"""A nugget listed twice for one turn or one answer is refused with one error line naming the file, record and both
nuggets (it would be scored twice, over one nugget too many); an iKAT gold grade in digits other than 0-9 ("²",
which str.isdigit() accepts and int() refuses) is one error line too, never a traceback. `judge nuggets` in-process."""

from __future__ import annotations

import json
from pathlib import Path

from mtrbench.cli import main

GOLD = {"q1": [("x", "vital"), ("y", "vital"), ("z", "okay")]}


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def answer(qid: str, labels: list[tuple[str, str, str]]) -> dict:
    nuggets = [{"text": t, "importance": i, "assignment": a} for t, i, a in labels]
    return {"query": "", "qid": qid, "answer_text": "", "response_length": 0, "run_id": "run-a", "nuggets": nuggets}


def one_error(capsys) -> str:
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


# the gold file's three nuggets, and "x" (supported) given a second time: scored over 4 nuggets, strict_all would be
# 3/4 (x twice, y) instead of the 2/3 of the three nuggets
REPEATED = [
    ("x", "vital", "support"),
    ("y", "vital", "support"),
    ("x ", "vital", "support"),
    ("z", "okay", "not_support"),
]


def test_an_answer_listing_a_nugget_twice_is_refused(tmp_path, capsys):
    run = write_jsonl(tmp_path / "run-a.jsonl", [answer("q0", [("w", "vital", "support")]), answer("q1", REPEATED)])
    assert main(["judge", "nuggets", "--assignments", str(run)]) == 2
    assert one_error(capsys) == f"error: {run}:2 (qid q1) nugget 3: 'x' is listed twice (also nugget 1); list it once"
    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [{"qid": q, "query": "", "nuggets": [{"text": t, "importance": i} for t, i in n]} for q, n in GOLD.items()],
    )
    assert main(["judge", "nuggets", "--assignments", str(run), "--nuggets", str(gold)]) == 2
    assert f"{run}:2 (qid q1) nugget 3: 'x' is listed twice" in one_error(capsys)


def test_a_nugget_file_listing_a_nugget_twice_is_refused(tmp_path, capsys):
    run = write_jsonl(tmp_path / "run-a.jsonl", [answer("q1", REPEATED[:2] + REPEATED[3:])])
    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [{"qid": "q1", "nuggets": [{"text": "x"}, {"text": "y"}, {"text": "z"}, {"text": "y"}]}],
    )
    assert main(["judge", "nuggets", "--assignments", str(run), "--nuggets", str(gold)]) == 2
    assert one_error(capsys) == f"error: {gold}:1 (qid q1) nugget 4: 'y' is listed twice (also nugget 2); list it once"


def ikat_gold(path: Path, nuggets: dict[str, tuple[str, str]]) -> Path:
    path.write_text(json.dumps({"q1": {key: {"text": t, "relevance": g} for key, (t, g) in nuggets.items()}}))
    return path


def test_ikat_gold_listing_a_nugget_twice_or_a_grade_in_other_digits_is_refused(tmp_path, capsys):
    run = write_jsonl(tmp_path / "run-a.jsonl", [answer("q1", REPEATED[:2] + REPEATED[3:])])
    twice = ikat_gold(
        tmp_path / "twice.json", {"[1]": ("x", "3"), "[2]": ("y", "4"), "[3]": ("z", "1"), "[4]": ("x", "2")}
    )
    assert main(["judge", "nuggets", "--assignments", str(run), "--nuggets", str(twice)]) == 2
    assert (
        one_error(capsys) == f"error: {twice}: turn q1 nugget [4]: 'x' is listed twice (also nugget [1]); list it once"
    )
    squared = ikat_gold(tmp_path / "sq.json", {"[1]": ("x", "3"), "[2]": ("y", "²"), "[3]": ("z", "1")})
    assert main(["judge", "nuggets", "--assignments", str(run), "--nuggets", str(squared)]) == 2
    assert one_error(capsys) == f"error: {squared}: turn q1 nugget [2]: 'relevance' must be a grade (digits), got '²'"
    # the same file with ASCII digits scores: x and y vital (graded 3 and 4), both supported, z okay and not
    plain = ikat_gold(tmp_path / "plain.json", {"[1]": ("x", "3"), "[2]": ("y", "4"), "[3]": ("z", "1")})
    out = tmp_path / "scores.json"
    assert main(["judge", "nuggets", "--assignments", str(run), "--nuggets", str(plain), "--output", str(out)]) == 0
    scores = json.loads(out.read_text())["runs"]["run-a"]["scores"]
    assert scores == {"n": 1, "strict_vital": 2 / 2, "vital": 2 / 2, "strict_all": 2 / 3, "all": 2 / 3}
