"""Bad iKAT run files: a score that is not finite, a run of the other years' layout, a turn or passage listed twice.
Runs are written in the published layouts with invented ClueWeb22-form passage ids (tests/data/ikat_fixtures.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtrbench.cli import main
from mtrbench.data import load_task
from mtrbench.formats.ikat_run import TopicTurns, TurnOutput, check_run, ikat_document, read_ikat_run
from mtrbench.infra.errors import DataError
from mtrbench.results.ikat_out import topic_turns
from tests.data.ikat_fixtures import ikat_json_run, turn_ids, write_qrels

A, B, C = (f"clueweb22-en0001-02-0000{n}:0" for n in (1, 2, 3))


def one_error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def data_dir(tmp_path: Path, year: int) -> Path:
    """A --data-dir with qrels for the year's first four turns (what loading the task needs)."""
    folder = tmp_path / f"d{year}"
    folder.mkdir()
    write_qrels(folder / {2023: "2023-qrels.all-turns.txt", 2024: "2024-qrels.txt"}[year], turn_ids(year)[:4])
    return folder


def score(path: Path, task: str, data: Path | None = None) -> list[str]:
    return ["score", "--predictions", str(path), "--task", task, *(["--data-dir", str(data)] if data else [])]


def test_a_score_that_is_not_finite_is_one_error_naming_file_and_record(tmp_path, capsys):
    first, second = turn_ids(2023)[:2]
    run = ikat_json_run({first: [(A, 3.0), (B, 2.0)], second: [(A, 1.0), (C, float("nan"))]})
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))  # Python's json writes NaN, and reads it back, without a word
    message = one_error(capsys, score(path, "ikat-2023", data_dir(tmp_path, 2023)))
    assert (
        message
        == f"error: {path} turn 1 ({second}) response 0 passage_provenance 1 ({C}): score nan is not a finite number"
    )
    lines = [{"metadata": {"run_id": "r", "run_type": "automatic"}, "turn_id": t, "references": refs, "responses": []}
             for t, refs in ((first, {A: 1.0}), (second, {B: 2.0, C: float("-inf")}))]  # fmt: skip
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(DataError) as err:
        read_ikat_run(path)
    assert str(err.value) == f"{path} record 1 ({second}) reference {C}: score -inf is not a finite number"


def test_a_run_of_the_other_years_layout_is_refused(tmp_path, capsys):
    task = load_task("ikat-2025", require_corpus=False)
    turns = [TurnOutput(q.qid, [(A, 2.0), (B, 1.0)], "an answer") for q in task.queries]
    run_2025 = tmp_path / "run.jsonl"
    run_2025.write_text(ikat_document(turns, 2025, "team", "automatic", {}))
    message = one_error(capsys, score(run_2025, "ikat-2024", data_dir(tmp_path, 2024)))
    assert message == (
        f"error: {run_2025}: an iKAT run in the 2025 layout (JSON lines, one turn a line), but task ikat-2024 is iKAT "
        "2024, whose runs are in the 2023/2024 layout (one JSON object): score it on a task of its own year"
    )
    run_2024 = tmp_path / "run.json"
    run_2024.write_text(ikat_document([TurnOutput(t, [(A, 1.0)]) for t in turn_ids(2024)], 2024, "r", "automatic", {}))
    message = one_error(capsys, score(run_2024, "ikat-2025"))
    assert message.startswith(f"error: {run_2024}: an iKAT run in the 2023/2024 layout (one JSON object), but task")


def test_a_turn_listed_twice_keeps_its_first_entry_as_a_passage_does_and_each_repeat_warns(tmp_path):
    first, second = turn_ids(2023)[:2]
    run = ikat_json_run({first: [(A, 3.0), (B, 2.0), (A, 1.0)], second: [(C, 1.0)]})
    run["turns"].append(
        ikat_json_run({first: [(C, 9.0), (B, 8.0)]})["turns"][0]
    )  # the first turn again, other passages
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    ikat = read_ikat_run(path)
    assert ikat.passage_run() == {first: {A: 3.0, B: 2.0}, second: {C: 1.0}}
    task = load_task("ikat-2023", data_dir=data_dir(tmp_path, 2023), require_corpus=False)
    warnings = check_run(ikat, topic_turns(task), 2023).warnings
    assert warnings[:2] == [
        f"turn {first} response 0: passage {A} listed again (the first kept)",
        f"turn 2: turn id {first} listed again (turn 0 is scored)",
    ]
    # 2025: a passage given twice in one turn's references (JSON keeps the last key; the run keeps the first), and a
    # turn given on two lines
    lines = [f'{{"metadata": {{"run_id": "r", "run_type": "automatic"}}, "turn_id": "{t}", "references": {refs}}}'
             for t, refs in ((first, f'{{"{A}": 2.0, "{B}": 1.0, "{A}": 0.5}}'), (first, f'{{"{C}": 4.0}}'))]  # fmt: skip
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n")
    ikat = read_ikat_run(path)
    assert ikat.passage_run() == {first: {A: 2.0, B: 1.0}}
    assert ikat.repeats() == [
        f"turn {first}: reference {A} listed again (the first kept)",
        f"turn 1: turn id {first} listed again (turn 0 is scored)",
    ]


def test_ids_in_other_digits_are_not_read_as_numbers(tmp_path):
    # a 2024 statement id is written as a number when it is one; "²" passes str.isdigit() and int() refuses it
    document = ikat_document([TurnOutput("5_1", [(A, 1.0)], "", [("²", "a statement", 1.0)])], 2024, "r", "manual", {})
    assert json.loads(document)["turns"][0]["responses"][0]["ptkb_provenance"] == ["²"]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(ikat_json_run({"5_²": [(A, 1.0)]})))
    checks = check_run(read_ikat_run(path), TopicTurns({"5": ["5_1"]}, {"5": []}), 2023)
    assert "turn id '5_²' is not <topic>_<turn>" in checks.errors
