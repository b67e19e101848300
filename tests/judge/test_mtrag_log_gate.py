"""The MTRAG judge's two logs are read back through the numeric gate: a NaN, an infinity, a string or a value off
its documented scale (RB_llm a 1-10 rating / 10; idk_eval and underspecified_eval 1, 0 or 0.5; RL_F verdicts 0 or
1) is one error naming the log's file and line, never a number averaged into the summary."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from llm_server import ScriptedChatServer
from test_mtrag_run import PREDICTIONS, _argv, judge

from mtrbench.cli import main
from mtrbench.formats.mtrag_eval import read_tasks
from mtrbench.infra.errors import DataError
from mtrbench.judge.mtrag.resume import LOG_NAME, algorithmic_with_log

LEXICAL = ("Recall", "RougeL_stemFalse")


def _replace_line(path: Path, number: int, record: dict) -> None:
    lines = path.read_text().splitlines()
    lines[number - 1] = json.dumps(record)  # json writes NaN/Infinity literals, as a hand edit could
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("bad", [math.nan, math.inf, "0.5"])
def test_the_metrics_log_refuses_a_bad_value_naming_its_line(tmp_path, bad):
    tasks = read_tasks(PREDICTIONS)
    algorithmic_with_log(tasks, LEXICAL, None, None, tmp_path)
    log = tmp_path / LOG_NAME
    record = json.loads(log.read_text().splitlines()[1])
    record["metrics"]["Recall"] = [bad]
    _replace_line(log, 2, record)
    with pytest.raises(DataError, match=rf"^{log}:2: metric Recall value"):
        algorithmic_with_log(tasks, LEXICAL, None, None, tmp_path)


def test_the_metrics_log_keeps_a_passage_without_a_score(tmp_path):
    tasks = read_tasks(PREDICTIONS)
    first = algorithmic_with_log(tasks, LEXICAL, None, None, tmp_path)
    log = tmp_path / LOG_NAME
    record = json.loads(log.read_text().splitlines()[0])
    record["metrics"]["Recall"] = [None, 0.25]
    _replace_line(log, 1, record)
    assert algorithmic_with_log(tasks, LEXICAL, None, None, tmp_path)[0]["Recall"] == [None, 0.25]
    assert algorithmic_with_log(tasks, LEXICAL, None, None, tmp_path)[1:] == first[1:]


def test_judge_mtrag_on_a_bad_metrics_log_is_one_error_line(tmp_path, capsys):
    argv = _argv(tmp_path, "http://127.0.0.1:9", "--metrics", ",".join(LEXICAL))
    assert main(argv) == 0
    log = tmp_path / LOG_NAME
    record = json.loads(log.read_text().splitlines()[2])
    record["metrics"]["RougeL_stemFalse"] = [math.inf]
    _replace_line(log, 3, record)
    capsys.readouterr()
    assert main(argv) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert errors == [f"error: {log}:3: metric RougeL_stemFalse value inf is not a finite number"]


LLM_METRICS = "RB_llm,RL_F,idk_eval,underspecified_eval"


@pytest.mark.parametrize(
    ("step", "bad", "said"),
    [
        ("RB_llm|", 4.2, "off its scale"),  # a rating of 42 / 10
        ("RB_llm|", math.nan, "not a finite number"),
        ("idk_eval|", 0.3, "off its scale"),
        ("underspecified_eval|", math.inf, "not a finite number"),
        ("RL_F.verdicts|", [1, 7], "off its scale"),
        ("RL_F.verdicts|", [math.nan], "not a finite number"),
    ],
)
def test_the_judges_log_refuses_a_value_off_its_scale_naming_its_line(tmp_path, capsys, step, bad, said):
    with ScriptedChatServer(judge) as server:
        argv = _argv(tmp_path, server.base_url, "--metrics", LLM_METRICS)
        assert main(argv) == 0
        log = tmp_path / "llm_judgments.jsonl"
        lines = log.read_text().splitlines()
        number = next(n for n, line in enumerate(lines, 1) if json.loads(line)["key"].startswith(step))
        _replace_line(log, number, {**json.loads(lines[number - 1]), "value": bad})
        capsys.readouterr()
        sent = server.request_count
        assert main(argv) == 2
        assert server.request_count == sent  # refused while reading the log, before anything is asked
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(errors) == 1
    assert errors[0].startswith(f"error: {log}:{number}: ") and said in errors[0]
