"""`judge nuggets --human-labels FILE...`: people's nugget assignments of some answers correct each run's four scores
by PPI, on the `--assignments` path and on the LLM path (scripted server). Every expected value is ``ppi_mean`` of
per-answer scores worked out here by hand (or from the scripted model's remembered replies), never read back from
mtrbench's per-answer output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_server import ScriptedChatServer
from test_nuggets_llm import (
    GENERATIONS,
    KEY_ENV,
    SECRET,
    ScriptedNuggetModel,
    expected_scores,
    nugget_args,
    read_jsonl,
    write_judges,
)

from mtrbench.analyses.ppi import ppi_mean
from mtrbench.cli import main

SCORES = ("strict_vital", "vital", "strict_all", "all")


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def record(qid: str, nuggets: list[tuple[str, str, str]], run: str | None = None) -> dict:
    row: dict = {"query": "", "qid": qid, "answer_text": "", "response_length": 0}
    if run is not None:
        row["run_id"] = run
    return {**row, "nuggets": [{"text": t, "importance": i, "assignment": a} for t, i, a in nuggets]}


def labelled(names: list[tuple[str, str]], labels: list[str]) -> list[tuple[str, str, str]]:
    return [(text, importance, label) for (text, importance), label in zip(names, labels)]


def expected_ppi(llm: dict[str, tuple], human: dict[str, tuple]) -> dict[str, dict]:
    """ppi_mean per score, from per-answer (strict_vital, vital, strict_all, all) tuples."""
    return {
        name: ppi_mean({q: v[k] for q, v in llm.items()}, {q: v[k] for q, v in human.items()}).as_dict()
        for k, name in enumerate(SCORES)
    }


def assert_ppi(block: dict, expected: dict[str, dict]) -> None:
    for name in SCORES:
        assert block[name] == pytest.approx(expected[name]), name


def single_error(capsys) -> str:
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), lines
    return lines[0]


# -- the --assignments path ------------------------------------------------------------------------------------

NUGGETS = {  # turn -> (text, importance) of its nuggets
    "t1": [("A", "vital"), ("B", "vital"), ("C", "okay")],
    "t2": [("D", "vital"), ("E", "okay")],
    "t3": [("F", "okay"), ("G", "okay")],  # no vital nugget: both vital scores 0.0
    "t4": [("H", "vital")],
}
LLM_LABELS = {
    "t1": ["support", "partial_support", "support"],
    "t2": ["partial_support", "support"],
    "t3": ["support", "not_support"],
    "t4": ["support"],
}
# by hand: (strict_vital, vital, strict_all, all) of each of the LLM's answers above
LLM_SCORES = {
    "t1": (1 / 2, 1.5 / 2, 2 / 3, 2.5 / 3),
    "t2": (0.0, 0.5, 1 / 2, 1.5 / 2),
    "t3": (0.0, 0.0, 1 / 2, 1 / 2),
    "t4": (1.0, 1.0, 1.0, 1.0),
}
HUMAN_LABELS = {
    "t1": ["support", "not_support", "partial_support"],
    "t2": ["not_support", "support"],
    "t4": ["partial_support"],
}
HUMAN_SCORES = {"t1": (1 / 2, 1 / 2, 1 / 3, 1.5 / 3), "t2": (0.0, 0.0, 1 / 2, 1 / 2), "t4": (0.0, 0.5, 0.0, 0.5)}


def assignment_files(tmp_path: Path) -> tuple[Path, Path]:
    alpha = write_jsonl(
        tmp_path / "alpha.jsonl", [record(q, labelled(NUGGETS[q], LLM_LABELS[q]), "alpha") for q in NUGGETS]
    )
    beta = write_jsonl(
        tmp_path / "beta.jsonl", [record(q, labelled(NUGGETS[q], ["not_support"] * 3), "beta") for q in NUGGETS]
    )
    return alpha, beta


def test_assignment_path_ppi_per_score(tmp_path, capsys):
    """alpha has human labels (records naming no run, in a file named alpha.jsonl), beta has none: only alpha gets
    a ppi block; without the flag there is none at all and the rest of the file is the same."""
    alpha, beta = assignment_files(tmp_path)
    people = tmp_path / "people"
    people.mkdir()
    human = write_jsonl(
        people / "alpha.jsonl", [record(q, labelled(NUGGETS[q], HUMAN_LABELS[q])) for q in HUMAN_LABELS]
    )
    out, plain = tmp_path / "scores.json", tmp_path / "plain.json"
    base = ["judge", "nuggets", "--assignments", str(alpha), str(beta)]
    assert main([*base, "--human-labels", str(human), "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "alpha: 3 of 4 answers labelled by people (PPI, 95%)" in printed and "humans interval" in printed
    assert main([*base, "--output", str(plain)]) == 0
    doc, without = json.loads(out.read_text()), json.loads(plain.read_text())
    block = doc["runs"]["alpha"].pop("ppi")
    assert block["human_labels"] == str(human)
    assert_ppi(block, expected_ppi(LLM_SCORES, HUMAN_SCORES))
    assert block["all"]["items"] == 4 and block["all"]["labelled"] == 3
    # the LLM-only mean is the run's reported mean: (strict_vital) (0.5 + 0 + 0 + 1) / 4
    assert block["strict_vital"]["llm_mean"] == pytest.approx(1.5 / 4)
    assert "ppi" not in doc["runs"]["beta"]
    assert doc["runs"] == without["runs"]
    assert '"ppi":' not in plain.read_text()


def test_assignment_path_bad_human_labels(tmp_path, capsys):
    alpha, beta = assignment_files(tmp_path)
    good = [record(q, labelled(NUGGETS[q], HUMAN_LABELS[q]), "alpha") for q in HUMAN_LABELS]
    cases = {
        "unknown turn 't9'": [*good, record("t9", [("A", "vital", "support")], "alpha")],
        "the human nuggets differ": [good[0], record("t2", labelled([("D", "vital"), ("X", "okay")], ["support"] * 2))],
        "assignment 'maybe'": [good[0], record("t2", labelled(NUGGETS["t2"], ["maybe", "support"]), "alpha")],
        "not a run judged here": [record(q, labelled(NUGGETS[q], HUMAN_LABELS[q]), "gamma") for q in HUMAN_LABELS],
        "at least 2 labelled answers": good[:1],
    }
    for message, rows in cases.items():
        human = write_jsonl(tmp_path / "human.jsonl", rows)
        assert main(["judge", "nuggets", "--assignments", str(alpha), str(beta), "--human-labels", str(human)]) == 2
        error = single_error(capsys)
        assert message in error and str(human) in error, (message, error)
    malformed = tmp_path / "malformed.jsonl"
    malformed.write_text(json.dumps(good[0]) + "\n{not json\n")
    assert main(["judge", "nuggets", "--assignments", str(alpha), "--human-labels", str(malformed)]) == 2
    assert f"{malformed}:2" in single_error(capsys)
    twice = write_jsonl(tmp_path / "twice.jsonl", good)
    args = ["judge", "nuggets", "--assignments", str(alpha), "--human-labels", str(twice), str(twice)]
    assert main(args) == 2 and "already has human labels" in single_error(capsys)


# -- the LLM path ------------------------------------------------------------------------------------------------

QIDS = ["geo-01_1", "geo-01_2", "geo-01_3", "geo-01_4"]
# given nuggets, the same four for every turn; the scripted model labels "support" when a nugget's last word is in
# the answer, "partial_support" when only its first word is
GIVEN = [("the glacier retreated", "okay"), ("its depth metres", "vital"), ("river outlet", "okay"),
         ("bridge opened", "vital")]  # fmt: skip
PEOPLE = {
    "geo-01_1": ["support", "support", "not_support", "partial_support"],
    "geo-01_2": ["not_support", "support", "not_support", "not_support"],
    "geo-01_4": ["partial_support", "not_support", "not_support", "support"],
}
# by hand from PEOPLE (vital: the 2nd and 4th nugget): (strict_vital, vital, strict_all, all)
PEOPLE_SCORES = {
    "geo-01_1": (1 / 2, 1.5 / 2, 2 / 4, 2.5 / 4),
    "geo-01_2": (1 / 2, 1 / 2, 1 / 4, 1 / 4),
    "geo-01_4": (1 / 2, 1 / 2, 1 / 4, 1.5 / 4),
}


def given_file(tmp_path: Path) -> Path:
    rows = [{"query": q, "qid": q, "nuggets": [{"text": t, "importance": i} for t, i in GIVEN]} for q in QIDS]
    return write_jsonl(tmp_path / "given.jsonl", rows)


def people_file(tmp_path: Path, rows: list[dict] | None = None) -> Path:
    rows = rows if rows is not None else [record(q, labelled(GIVEN, PEOPLE[q]), "run-a") for q in PEOPLE]
    return write_jsonl(tmp_path / "people.jsonl", rows)


def test_llm_path_ppi_per_score(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, SECRET)
    model = ScriptedNuggetModel()
    run_a = write_jsonl(tmp_path / "run-a.jsonl", [json.loads(line) for line in GENERATIONS.read_text().splitlines()])
    out = tmp_path / "out"
    with ScriptedChatServer(model) as server:
        args = nugget_args([run_a], write_judges(tmp_path / "j.json", server.base_url), out)
        args += ["--nuggets", str(given_file(tmp_path)), "--human-labels", str(people_file(tmp_path))]
        assert main(args) == 0, capsys.readouterr().err
    assert "PPI" in capsys.readouterr().out
    llm = {}
    for row in read_jsonl(out / "assignments" / "run-a.jsonl"):  # the model's remembered labels, by the formulas
        marks = [model.assigned[(row["answer_text"], text)] for text, _ in GIVEN]
        scores = expected_scores([[(i == "vital", m) for (_, i), m in zip(GIVEN, marks)]])
        llm[row["qid"]] = tuple(scores[name] for name in SCORES)
    assert len({v for v in llm.values()}) > 1  # the LLM's answers differ, so the check is not trivial
    block = json.loads((out / "scores.json").read_text())["runs"]["run-a"]["ppi"]
    assert_ppi(block, expected_ppi(llm, PEOPLE_SCORES))
    assert block["vital"]["items"] == 4 and block["vital"]["labelled"] == 3


def test_llm_path_bad_human_labels_fail_before_any_request(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, SECRET)
    good = [record(q, labelled(GIVEN, PEOPLE[q]), "run-a") for q in PEOPLE]
    other_nuggets = labelled([("some other fact", "vital"), *GIVEN[1:]], PEOPLE["geo-01_2"])
    cases = {
        "unknown turn 'geo-02_1'": [*good, record("geo-02_1", labelled(GIVEN, PEOPLE["geo-01_1"]), "run-a")],
        "is not a nugget of turn geo-01_2": [good[0], record("geo-01_2", other_nuggets, "run-a")],
        "assignment 'yes'": [good[0], record("geo-01_2", labelled(GIVEN, ["yes"] * 4), "run-a")],
        "not a run judged here": [record(q, labelled(GIVEN, PEOPLE[q]), "run-z") for q in PEOPLE],
    }
    model = ScriptedNuggetModel()
    run_a = write_jsonl(tmp_path / "run-a.jsonl", [json.loads(line) for line in GENERATIONS.read_text().splitlines()])
    with ScriptedChatServer(model) as server:
        base = nugget_args([run_a], write_judges(tmp_path / "j.json", server.base_url), tmp_path / "out")
        base += ["--nuggets", str(given_file(tmp_path))]
        for message, rows in cases.items():
            human = people_file(tmp_path, rows)
            assert main([*base, "--human-labels", str(human)]) == 2
            error = single_error(capsys)
            assert message in error and str(human) in error, (message, error)
        malformed = tmp_path / "malformed.jsonl"
        malformed.write_text(json.dumps(good[0]) + "\n" + json.dumps(good[1])[:30] + "\n")
        assert main([*base, "--human-labels", str(malformed)]) == 2
        assert f"{malformed}:2" in single_error(capsys)
        assert server.request_count == 0


def test_created_nuggets_are_checked_before_any_assignment(tmp_path, monkeypatch, capsys):
    """Without --nuggets the LLM's nuggets exist only once created: a human file with other nuggets fails then, one
    error line naming the file and turn, before any answer is assigned."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    model = ScriptedNuggetModel()
    human = people_file(tmp_path)
    with ScriptedChatServer(model) as server:
        args = nugget_args([GENERATIONS], write_judges(tmp_path / "j.json", server.base_url), tmp_path / "out")
        rows = [{**r, "run_id": "generations-sample"} for r in read_jsonl(human)]
        human = people_file(tmp_path, rows)
        assert main([*args, "--human-labels", str(human)]) == 2
    error = single_error(capsys)
    assert f"{human}:1" in error and "turn 'geo-01_1'" in error and "the human nuggets differ" in error
    assert model.asked["create"] == 4 and model.asked["assign"] == 0


def test_a_file_naming_no_run_belongs_to_the_only_run_judged(tmp_path, capsys):
    alpha, beta = assignment_files(tmp_path)
    human = write_jsonl(
        tmp_path / "people.jsonl", [record(q, labelled(NUGGETS[q], HUMAN_LABELS[q])) for q in HUMAN_LABELS]
    )
    out = tmp_path / "scores.json"
    assert (
        main(["judge", "nuggets", "--assignments", str(alpha), "--human-labels", str(human), "--output", str(out)]) == 0
    )
    assert_ppi(json.loads(out.read_text())["runs"]["alpha"]["ppi"], expected_ppi(LLM_SCORES, HUMAN_SCORES))
    capsys.readouterr()
    assert main(["judge", "nuggets", "--assignments", str(alpha), str(beta), "--human-labels", str(human)]) == 2
    assert "its records name no run_id and its stem 'people' is not a run judged here" in single_error(capsys)
