"""nuggetizer's nugget and assignment JSONL, iKAT 2024's gold nuggets and responses (a fixture in CONE-RAG's layout
with invented content), and `judge nuggets --assignments`: scores, the written JSON, and one error line per bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtrbench.cli import main
from mtrbench.infra.errors import DataError
from mtrbench.judge.nuggets.assignment_file import (
    AnswerAssignment,
    AssignedNugget,
    read_assignment_file,
    write_assignment_file,
)
from mtrbench.judge.nuggets.ikat import read_ikat_nuggets, read_ikat_responses
from mtrbench.judge.nuggets.nugget_file import Nugget, NuggetSet, read_nugget_file, write_nugget_file

DATA = Path(__file__).resolve().parents[1] / "data" / "nuggets"


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def assigned(qid: str, run: str, labels: list[tuple[str, str, str]], **extra) -> dict:
    return {
        "query": f"question {qid}",
        "qid": qid,
        "answer_text": f"answer of {run} to {qid}",
        "response_length": 5,
        "run_id": run,
        "nuggets": [{"text": t, "importance": i, "assignment": a} for t, i, a in labels],
        **extra,
    }


def test_nugget_file_round_trip_is_nuggetizers_layout(tmp_path):
    path = tmp_path / "nuggets.jsonl"
    sets = [NuggetSet("q1", "Where is é?", (Nugget("a fact", "vital"), Nugget("another", "okay")), {"model": "m"})]
    write_nugget_file(path, sets)
    line = path.read_text(encoding="utf-8")
    assert (
        line
        == json.dumps(
            {
                "query": "Where is é?",
                "qid": "q1",
                "nuggets": [{"text": "a fact", "importance": "vital"}, {"text": "another", "importance": "okay"}],
                "mtrbench": {"model": "m"},
            }
        )
        + "\n"
    )
    back = read_nugget_file(path)["q1"]
    assert back.nuggets == sets[0].nuggets and back.query == "Where is é?"


def test_a_nugget_without_importance_is_vital_as_nuggetizer_reads_it(tmp_path):
    path = write_jsonl(tmp_path / "n.jsonl", [{"qid": 7, "query": "q", "nuggets": [{"text": "x"}]}])
    assert read_nugget_file(path)["7"].nuggets == (Nugget("x", "vital"),)


def test_assignment_file_round_trip(tmp_path):
    answer = AnswerAssignment("q1", (AssignedNugget("a", "vital", "partial_support"),), "Q?", "text", 3, "run-a")
    path = tmp_path / "run-a.jsonl"
    write_assignment_file(path, [answer])
    assert json.loads(path.read_text()) == {
        "query": "Q?",
        "qid": "q1",
        "answer_text": "text",
        "response_length": 3,
        "run_id": "run-a",
        "nuggets": [{"text": "a", "importance": "vital", "assignment": "partial_support"}],
    }
    run = read_assignment_file(path)
    assert run.run_id == "run-a" and run.answers["q1"].nuggets == answer.nuggets


def test_a_file_without_run_id_is_named_after_its_stem(tmp_path):
    row = assigned("q1", "", [("a", "vital", "support")])
    del row["run_id"]
    assert read_assignment_file(write_jsonl(tmp_path / "my-run.jsonl", [row])).run_id == "my-run"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"qid": "q1", "nuggets": [{"text": "a", "importance": "vital", "assignment": "maybe"}]}, "assignment 'maybe'"),
        ({"qid": "q1", "nuggets": [{"text": "a", "assignment": "support"}]}, "needs 'importance'"),
        ({"qid": "q1", "nuggets": [{"text": "a", "importance": "key", "assignment": "support"}]}, "importance 'key'"),
        ({"nuggets": []}, "needs 'qid'"),
        ({"qid": "q1", "nuggets": "a"}, "'nuggets' must be a list"),
        ({"qid": "q1", "nuggets": [], "response_length": "5"}, "'response_length' must be an integer"),
    ],
)
def test_malformed_assignment_records_name_file_and_line(tmp_path, row, message):
    path = write_jsonl(tmp_path / "r.jsonl", [assigned("q0", "r", []), row])
    with pytest.raises(DataError) as err:
        read_assignment_file(path)
    assert str(err.value).startswith(f"{path}:2") and message in str(err.value)


def test_ikat_gold_nuggets_and_responses():
    gold = read_ikat_nuggets(DATA / "ikat-gold.json", vital_grade=3)
    assert list(gold) == ["5_1", "5_2", "7_3"]
    assert [(n.text, n.importance) for n in gold["5_1"].nuggets] == [
        ("The Orlen ferry leaves the harbour every forty minutes.", "vital"),
        ("Tickets for the Orlen ferry are sold on board only", "okay"),
        ("Bicycles travel free on the morning crossings.", "vital"),
    ]
    assert [n.importance for n in read_ikat_nuggets(DATA / "ikat-gold.json", vital_grade=2)["5_2"].nuggets] == [
        "okay",
        "vital",
    ]
    responses = read_ikat_responses(DATA / "ikat-responses.json")
    assert sorted(responses) == ["basalt-bm25-run", "orchid-rerank-run"]
    assert sorted(responses["orchid-rerank-run"]) == ["5_1", "5_2", "7_3"]


GOLD = {  # text -> grade in the fixture
    "The Orlen ferry leaves the harbour every forty minutes.": 3,
    "Tickets for the Orlen ferry are sold on board only": 2,
    "Bicycles travel free on the morning crossings.": 4,
    "The island museum closes on Mondays.": 1,
    "Entry to the island museum costs six coins.": 2,
    "Quill moss grows only above the tree line.": 3,
}
TURNS = {"5_1": list(GOLD)[:3], "5_2": list(GOLD)[3:5], "7_3": list(GOLD)[5:]}
LABELS = {
    "orchid-rerank-run": {
        "5_1": ["support", "not_support", "support"],
        "5_2": ["support", "support"],
        "7_3": ["partial_support"],
    },
    "basalt-bm25-run": {"5_1": ["partial_support", "support", "not_support"], "5_2": ["not_support", "not_support"]},
}


def ikat_assignment_files(tmp_path: Path) -> list[Path]:
    """Assignment files whose own importance says "okay" everywhere: the gold file's grades must decide."""
    paths = []
    for run, by_turn in LABELS.items():
        rows = [
            assigned(qid, run, [(t, "okay", a) for t, a in zip(TURNS[qid], labels)]) for qid, labels in by_turn.items()
        ]
        paths.append(write_jsonl(tmp_path / f"{run}.jsonl", rows))
    return paths


def expected_ikat(run: str, vital_grade: int) -> dict[str, float]:
    credit = {"support": 1.0, "partial_support": 0.5, "not_support": 0.0}
    per_answer = []
    for qid, labels in LABELS[run].items():
        grades = [GOLD[t] for t in TURNS[qid]]
        vital = [credit[a] for a, g in zip(labels, grades) if g >= vital_grade]
        strict_vital = [1.0 if a == "support" else 0.0 for a, g in zip(labels, grades) if g >= vital_grade]
        every = [credit[a] for a in labels]
        strict = [1.0 if a == "support" else 0.0 for a in labels]
        per_answer.append(
            [
                sum(strict_vital) / len(vital) if vital else 0.0,
                sum(vital) / len(vital) if vital else 0.0,
                sum(strict) / len(every),
                sum(every) / len(every),
            ]
        )
    means = [sum(column) / len(per_answer) for column in zip(*per_answer)]
    return dict(zip(["strict_vital", "vital", "strict_all", "all"], means))


def test_ikat_gold_nuggets_responses_and_assignments_give_the_run_scores(tmp_path, capsys):
    out = tmp_path / "scores.json"
    args = ["judge", "nuggets", "--assignments", *map(str, ikat_assignment_files(tmp_path))]
    args += ["--nuggets", str(DATA / "ikat-gold.json"), "--responses", str(DATA / "ikat-responses.json")]
    assert main([*args, "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "orchid-rerank-run" in printed and "basalt-bm25-run" in printed
    runs = json.loads(out.read_text())["runs"]
    for run in LABELS:
        want = expected_ikat(run, 3)
        assert runs[run]["scores"]["n"] == len(LABELS[run])
        assert {k: runs[run]["scores"][k] for k in want} == pytest.approx(want)
    assert main([*args, "--vital-grade", "2", "--output", str(out)]) == 0
    runs = json.loads(out.read_text())["runs"]
    assert runs["basalt-bm25-run"]["scores"]["vital"] == pytest.approx(expected_ikat("basalt-bm25-run", 2)["vital"])


def test_sample_task_breakdowns_and_ties(tmp_path, capsys):
    """Two runs with the same labels tie: both reported, each with the same means, in the order given."""
    rows = [
        assigned("geo-01_1", "a", [("x", "vital", "support"), ("y", "okay", "partial_support")]),
        assigned("geo-01_5", "a", [("z", "okay", "support")]),
    ]
    first = write_jsonl(tmp_path / "a.jsonl", rows)
    second = write_jsonl(tmp_path / "b.jsonl", [dict(r, run_id="b") for r in rows])
    out = tmp_path / "s.json"
    assert (
        main(
            [
                "judge",
                "nuggets",
                "--assignments",
                str(first),
                str(second),
                "--task",
                "mtrbench-sample",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    doc = json.loads(out.read_text())
    assert list(doc["runs"]) == ["a", "b"]
    a = doc["runs"]["a"]
    assert a == {**doc["runs"]["b"], "file": str(first)}
    # geo-01_1: strict_vital 1, vital 1, strict_all 1/2, all 3/4; geo-01_5 (after the switch): 0, 0, 1, 1
    assert a["scores"] == {"n": 2, "strict_vital": 0.5, "vital": 0.5, "strict_all": 0.75, "all": 0.875}
    assert a["by_topic_switch"]["after_switch"] == {
        "n": 1,
        "strict_vital": 0.0,
        "vital": 0.0,
        "strict_all": 1.0,
        "all": 1.0,
    }
    assert a["by_turn"]["1"]["all"] == 0.75 and a["by_conversation"]["geo-01"]["n"] == 2
    assert a["per_answer"]["geo-01_5"] == {"strict_vital": 0.0, "vital": 0.0, "strict_all": 1.0, "all": 1.0}


def error_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def test_bad_inputs_are_one_error_line(tmp_path, capsys):
    good = write_jsonl(tmp_path / "a.jsonl", [assigned("geo-01_1", "a", [("x", "vital", "support")])])
    nuggets = write_jsonl(tmp_path / "n.jsonl", [{"qid": "geo-02_1", "query": "q", "nuggets": [{"text": "x"}]}])
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text(json.dumps(assigned("geo-01_1", "c", [])) + "\n{not json\n")
    wrong_turn = write_jsonl(tmp_path / "w.jsonl", [assigned("zz_9", "w", [])])
    other_run = write_jsonl(tmp_path / "o.jsonl", [assigned("5_1", "nobody-run", [])])
    unknown_turn = write_jsonl(tmp_path / "u.jsonl", [assigned("7_3", "basalt-bm25-run", [])])
    cases = [
        (["--assignments", str(bad_json)], f"{bad_json}:2: not valid JSON"),
        (["--assignments", str(wrong_turn), "--task", "mtrbench-sample"], f"{wrong_turn}:1: turn 'zz_9' is not a turn"),
        (["--assignments", str(good), "--nuggets", str(nuggets)], f"{good}:1: turn 'geo-01_1' has no nuggets in"),
        (
            ["--assignments", str(other_run), "--responses", str(DATA / "ikat-responses.json")],
            "run 'nobody-run' has no",
        ),
        (
            ["--assignments", str(unknown_turn), "--responses", str(DATA / "ikat-responses.json")],
            f"{unknown_turn}:1: unknown answer id basalt-bm25-run/7_3",
        ),
        (["--assignments", str(good), str(good)], "run 'a' is also the run of"),
        (["--assignments", str(tmp_path / "none.jsonl")], "does not exist"),
        ([], "nothing to score"),
    ]
    for extra, message in cases:
        assert main(["judge", "nuggets", *extra]) == 2, extra
        lines = error_lines(capsys)
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], (extra, lines)


def test_assignments_with_other_nuggets_than_the_nugget_file(tmp_path, capsys):
    nuggets = write_jsonl(
        tmp_path / "n.jsonl", [{"qid": "q1", "query": "q", "nuggets": [{"text": "x"}, {"text": "y"}]}]
    )
    extra = write_jsonl(
        tmp_path / "e.jsonl", [assigned("q1", "e", [("x", "vital", "support"), ("w", "okay", "support")])]
    )
    short = write_jsonl(tmp_path / "s.jsonl", [assigned("q1", "s", [("x", "vital", "support")])])
    assert main(["judge", "nuggets", "--assignments", str(extra), "--nuggets", str(nuggets)]) == 2
    assert "nugget 'w' is not a nugget of turn q1" in capsys.readouterr().err
    assert main(["judge", "nuggets", "--assignments", str(short), "--nuggets", str(nuggets)]) == 2
    assert "nugget 'y' of turn q1" in capsys.readouterr().err
