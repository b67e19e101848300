"""`judge mtrag --human-labels`: RB_llm's mean next to its PPI correction by human 1-10 ratings of some tasks, against
a scripted judge that rates each task's answer as TASK_RATINGS says; PPI computed by hand."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from statistics import fmean, variance

import pytest
from llm_server import Reply, ScriptedChatServer

from mtrbench.cli import main

PREDICTIONS = Path(__file__).resolve().parents[1] / "data" / "mtrag_eval" / "responses-4.jsonl"
ROWS = [json.loads(line) for line in PREDICTIONS.read_text().splitlines() if line.strip()]
TASK_IDS = [r["task_id"] for r in ROWS]
TASK_RATINGS = dict(zip(TASK_IDS, [8, 6, 9, 4]))
Z95 = 1.959963984540054


def rate(body: dict) -> Reply:
    content = body["messages"][-1]["content"]
    for row in ROWS:
        if row["predictions"][0]["text"][:60] in content:
            return Reply(f"Rating: [[{TASK_RATINGS[row['task_id']]}]]")
    return Reply("unexpected prompt", status=400)


def _argv(out: Path, url: str, *extra: str) -> list[str]:
    return [
        "judge", "mtrag", str(PREDICTIONS), "--metrics", "RB_llm", "--output-dir", str(out),
        "--llm-model", "judge-m", "--llm-base-url", url, "--yes", "--no-llm-cache", "--quiet", *extra,
    ]  # fmt: skip


def test_rb_llm_ppi_by_hand(tmp_path, capsys):
    human = tmp_path / "human.tsv"
    human.write_text(f"id\tlabel\n{TASK_IDS[0]}\t7\n{TASK_IDS[1]}\t6\n{TASK_IDS[3]}\t5\n")
    with ScriptedChatServer(rate) as server:
        assert main(_argv(tmp_path / "out", server.base_url, "--human-labels", str(human))) == 0
    ppi = json.loads((tmp_path / "out" / "summary.json").read_text())["judge_ppi"]
    llm = [0.8, 0.6, 0.9, 0.4]
    residuals = [0.8 - 0.7, 0.6 - 0.6, 0.4 - 0.5]
    expected = fmean(llm) - fmean(residuals)
    half = Z95 * math.sqrt(variance(llm) / 4 + variance(residuals) / 3)
    assert ppi["metric"] == "RB_llm" and ppi["llm_mean"] == pytest.approx(0.675)
    assert ppi["ppi_mean"] == pytest.approx(expected)
    assert ppi["ppi_high"] - ppi["ppi_mean"] == pytest.approx(half)
    assert ppi["human_mean"] == pytest.approx(0.6) and (ppi["items"], ppi["labelled"]) == (4, 3)
    assert f"PPI {expected:.4f}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "extra", "message"),
    [
        ("nope\t7\n", [], r"human.tsv:1: id 'nope' is not an item"),
        ("TASK0\t0\n", [], r"human.tsv:1 \(.*\): label '0' is not on the RB_llm rating 1-10 scale"),
        ("TASK0\t7\n", ["--human-metric", "idk_eval"], "--human-metric idk_eval is not among the metrics asked"),
    ],
)
def test_bad_human_labels_fail_before_any_request(tmp_path, capsys, text, extra, message):
    human = tmp_path / "human.tsv"
    human.write_text(text.replace("TASK0", TASK_IDS[0]))
    with ScriptedChatServer(rate) as server:
        assert main(_argv(tmp_path / "out", server.base_url, "--human-labels", str(human), *extra)) == 2
        assert server.request_count == 0
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert re.search(message, err)
