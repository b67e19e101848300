"""`qrels agree` on bad input: a --threshold above every grade is refused naming the largest grade; a pair one file
judges twice with different grades keeps the later grade with a counted warning; a grade too large for trec_eval is
one error line naming the file and line (the qrels reader refuses it for every command)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from mtrbench.cli import main


def write(path: Path, lines: list[str]) -> str:
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def one_error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_a_threshold_above_every_grade_is_refused(tmp_path, capsys):
    a = write(tmp_path / "a.qrels", ["q1 0 d1 0", "q1 0 d2 2", "q2 0 d1 1"])
    b = write(tmp_path / "b.qrels", ["q1 0 d1 3", "q1 0 d2 0", "q2 0 d1 1"])
    message = one_error(capsys, ["qrels", "agree", a, b, "--threshold", "4"])
    assert (
        message == f"error: --threshold 4 is above every grade: the largest is 3 (in {b}), so no pair would be relevant"
    )
    assert main(["qrels", "agree", a, b, "--threshold", "3"]) == 0  # B's 3 is relevant


def test_a_pair_judged_twice_with_different_grades_keeps_the_later_with_a_counted_warning(tmp_path, capsys):
    a = write(tmp_path / "a.qrels", ["q1 0 d1 1", "q1 0 d2 0", "q1 0 d3 2", "q2 0 d1 1"])
    # d1 regraded 0 -> 1 and q2 d1 1 -> 0 (two pairs); d3 repeated with its grade (no conflict, not counted)
    b_lines = ["q1 0 d1 0", "q1 0 d2 0", "q1 0 d3 2", "q2 0 d1 1", "q1 0 d1 1", "q1 0 d3 2", "q2 0 d1 0"]
    b = write(tmp_path / "b.qrels", b_lines)
    out = tmp_path / "agree.json"
    assert main(["qrels", "agree", a, b, "--threshold", "1", "--output", str(out)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"warning: {b}: 2 (query, document) pair(s) judged again with another grade, the later kept "
        f"(first: {b}:5, q1 d1: 0 then 1)"
    ]
    document = json.loads(out.read_text())
    assert document["regraded"] == {b: 2}
    # the later grades: B is 1, 0, 2, 0 on A's pairs d1, d2, d3, q2 d1
    graded = cohen_kappa_score([1, 0, 2, 1], [1, 0, 2, 0])
    assert document["graded"]["kappa"] == pytest.approx(graded) and document["graded"]["confusion"] == [
        [1, 0, 0],
        [1, 1, 0],
        [0, 0, 1],
    ]


def test_a_grade_too_large_for_trec_eval_is_one_error_line(tmp_path, capsys):
    a = write(tmp_path / "a.qrels", ["q1 0 d1 1", "q1 0 d2 0", "q2 0 d1 1"])
    b = write(tmp_path / "b.qrels", ["q1 0 d1 1", "q1 0 d2 99999999999", "q2 0 d1 1"])
    orders = {"r0": ("d1 d2", "d1 d3"), "r1": ("d2 d1", "d3 d1"), "r2": ("d2 d1", "d1 d3")}  # three rankings
    runs = [
        write(tmp_path / f"{name}.trec", [f"{q} Q0 {d} {k + 1} {2 - k} {name}" for q, order in zip(("q1", "q2"), docs)
                                          for k, d in enumerate(order.split())])
        for name, docs in orders.items()
    ]  # fmt: skip
    message = one_error(capsys, ["qrels", "agree", a, b, "--runs", *runs])
    assert message == (
        f"error: {b}:2 (q1): grade '99999999999' is out of range: a grade lies within 1,000,000 of 0 (trec_eval keeps "
        "a counter per grade level up to the largest)"
    )
    # without the check, kappa counted the grade as a label of its own and trec_eval garbled it (all systems equal)
    assert "grade '99999999999' is out of range" in one_error(capsys, ["qrels", "agree", a, b])
    assert "grade '99999999999' is out of range" in one_error(capsys, ["score", "--run", runs[0], "--qrels", b])
