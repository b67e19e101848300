"""`score --run` (and every reader of run files) takes the JSON run BEIR and pytrec_eval write,
``{qid: {docid: score}}``, told apart from TREC lines by its first character; any other JSON is one error."""

from __future__ import annotations

import json
import math

import pytest

from mtrbench.formats.run import read_run
from mtrbench.infra.errors import MtrbenchError
from tests.cli_run import run_cli

RUN = {"q1": {"d1": 1.5, "d2": -2.0, "d3": 0.25}, "q2": {"d1": 3.0}}


def test_a_json_run_reads_as_the_same_trec_lines_would(tmp_path):
    as_json = tmp_path / "beir.trec"  # a JSON run under a TREC name: the content decides, not the extension
    as_json.write_text("\n  " + json.dumps(RUN, indent=2))
    as_trec = tmp_path / "same.run"
    as_trec.write_text("q1 Q0 d1 1 1.5 t\nq1 Q0 d3 2 0.25 t\nq1 Q0 d2 3 -2 t\nq2 Q0 d1 1 3 t\n")
    assert read_run(as_json) == RUN == read_run(as_trec)


def test_score_takes_a_json_run_and_scores_it_as_by_hand(tmp_path):
    # q1: relevant d1 (grade 1) and d3 (grade 2); the run ranks d1, d3, d2: AP = (1/1 + 2/2) / 2 = 1.
    # q2: relevant d9 only, not retrieved: AP 0. MAP = 0.5; recall@1 = mean(1/2, 0) = 0.25.
    run = tmp_path / "run.json"
    run.write_text(json.dumps(RUN))
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 d1 1\nq1 0 d3 2\nq1 0 d2 0\nq2 0 d9 1\n")
    out = tmp_path / "s.json"
    done = run_cli("score", "--run", run, "--qrels", qrels, "--output", out)
    assert done.returncode == 0, done.stderr
    scores = json.loads(out.read_text())["scores"]
    assert scores["map_at_100"] == pytest.approx(0.5)
    assert scores["recall_at_1"] == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"q1": {"d1": NaN}}', r"run\.json \(query 'q1', document 'd1'\): score nan is not a finite number"),
        ('{"q1": {"d1": Infinity}}', r"run\.json \(query 'q1', document 'd1'\): score inf is not a finite number"),
        ('{"q1": {"d1": "high"}}', r"run\.json \(query 'q1', document 'd1'\): score 'high' is not a number"),
        ('{"q1": {"d1": true}}', r"run\.json \(query 'q1', document 'd1'\): score True is not a number"),
        ('{"q1": [["d1", 0.5]]}', r"run\.json: query 'q1' holds list, not an object .*expected a JSON run"),
        ('{"q1": {"d1": 1, "d1": 2}}', r"run\.json: 'd1' appears twice in one JSON object"),
        ('{"q1": {"d 1": 1}}', r"run\.json: document id 'd 1' \(query 'q1'\) contains white space"),
        ("{}", r"run\.json: expected a JSON run \{query id: \{document id: score\}\}.*got an empty object"),
        ('{"q1": {"d1": 1}', r"run\.json: not valid JSON .*expected a JSON run"),
        ('{"q1": {}}', r"run file .*run\.json is empty"),
    ],
)
def test_any_other_json_is_one_error_naming_the_file(tmp_path, text, message):
    path = tmp_path / "run.json"
    path.write_text(text)
    with pytest.raises(MtrbenchError, match=message):
        read_run(path)


def test_a_bad_json_run_is_one_error_line_on_the_command_line(tmp_path):
    run = tmp_path / "result.json"
    run.write_text(json.dumps({"task_name": "x", "scores": {"test": [{"ndcg_at_10": math.pi}]}}))
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 d1 1\n")
    done = run_cli("score", "--run", run, "--qrels", qrels)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and "result.json" in line and "expected a JSON run" in line
