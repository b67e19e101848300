"""`judge run --human-labels`: the judge's mean next to its PPI correction by human labels of some turns, against a
scripted judge on 127.0.0.1; PPI computed by hand from the scripted ratings and the human labels."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from statistics import fmean, variance

import pytest
from llm_server import ScriptedChatServer
from test_judge_llm import GENERATIONS, KEY_ENV, SECRET, ScriptedJudge, answers, write_judges

from mtrbench.cli import main

Z95 = 1.959963984540054
RATINGS = {"geo-01_1": 8, "geo-01_2": 6, "geo-01_3": 9, "geo-01_4": 3}


def _args(judges: Path, out: Path, *extra: str) -> list[str]:
    return [
        "judge",
        "run",
        str(GENERATIONS),
        "--task",
        "mtrbench-sample",
        "--judge",
        "rating",
        "--measures",
        "",
        "--judges",
        str(judges),
        "--no-llm-cache",
        "--output-dir",
        str(out),
        "--yes",
        "--quiet",
        *extra,
    ]


def test_rating_ppi_by_hand(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, SECRET)
    a = answers()
    judge = ScriptedJudge({a[q]: [f"Reasonable.\nRating: [[{r}]]"] for q, r in RATINGS.items()})
    human = tmp_path / "human.jsonl"
    human.write_text(
        json.dumps({"id": "geo-01_1", "label": 6})
        + "\n"
        + json.dumps({"id": "scripted|geo-01_2", "label": "6"})
        + "\n"
        + json.dumps({"id": "geo-01_4", "label": 4})
        + "\n"
    )
    out = tmp_path / "out"
    with ScriptedChatServer(judge) as server:
        judges = write_judges(tmp_path / "judges.json", server.base_url)
        assert main(_args(judges, out, "--human-labels", str(human))) == 0
    printed = capsys.readouterr().out
    ppi = json.loads((out / "scores.json").read_text())["judge_ppi"]
    llm = list(RATINGS.values())
    residuals = [8 - 6, 6 - 6, 3 - 4]  # the judge minus the humans on the labelled turns
    expected = fmean(llm) - fmean(residuals)
    half = Z95 * math.sqrt(variance(llm) / 4 + variance(residuals) / 3)
    assert ppi["llm_mean"] == pytest.approx(6.5)
    assert ppi["ppi_mean"] == pytest.approx(expected)
    assert (ppi["ppi_low"], ppi["ppi_high"]) == pytest.approx((expected - half, expected + half))
    assert ppi["human_mean"] == pytest.approx(16 / 3)
    assert (ppi["items"], ppi["labelled"], ppi["human_labels"], ppi["on_failed_turns"]) == (4, 3, 3, 0)
    assert f"PPI {expected:.3f}" in printed and "judge alone 6.500 over 4 turns" in printed


def test_without_the_flag_scores_json_has_no_ppi(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    a = answers()
    judge = ScriptedJudge({a[q]: [f"Rating: [[{r}]]"] for q, r in RATINGS.items()})
    with ScriptedChatServer(judge) as server:
        judges = write_judges(tmp_path / "judges.json", server.base_url)
        assert main(_args(judges, tmp_path / "out")) == 0
    assert "judge_ppi" not in json.loads((tmp_path / "out" / "scores.json").read_text())


@pytest.mark.parametrize(
    ("text", "message", "asked"),
    [
        ("geo-01_1\t11\n", r"human.tsv:1 \(geo-01_1\): label '11' is not on the rating 1-10 scale", False),
        ("geo-01_1\t7\nnot-a-turn\t5\n", r"human.tsv:2: id 'not-a-turn' is not an item", False),
        ("geo-01_1\t7\n", "at least two labelled", False),
    ],
)
def test_bad_human_labels_are_one_error_line(tmp_path, monkeypatch, capsys, text, message, asked):
    monkeypatch.setenv(KEY_ENV, SECRET)
    a = answers()
    judge = ScriptedJudge({a[q]: [f"Rating: [[{r}]]"] for q, r in RATINGS.items()})
    human = tmp_path / "human.tsv"
    human.write_text(text)
    with ScriptedChatServer(judge) as server:
        judges = write_judges(tmp_path / "judges.json", server.base_url)
        assert main(_args(judges, tmp_path / "out", "--human-labels", str(human))) == 2
        assert (server.request_count > 0) == asked  # a bad labels file fails before the judge is asked
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert re.search(message, err)


def test_human_labels_need_a_judge(tmp_path, capsys):
    human = tmp_path / "human.tsv"
    human.write_text("geo-01_1\t7\n")
    code = main(["judge", "run", str(GENERATIONS), "--task", "mtrbench-sample", "--human-labels", str(human)])
    assert code == 2 and "give --judge rating or verdict" in capsys.readouterr().err
