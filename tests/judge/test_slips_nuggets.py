"""A nugget judgement made under one judge model is not reused under another: creation, labels and assignments are
all asked again (and the written nuggets and assignments are the new model's), while the same model reuses the
log. The scripted model's replies name the model that made them, so every expected value is read off the replies."""

from __future__ import annotations

import json
import re
from pathlib import Path

from llm_server import Reply, ScriptedChatServer

from mtrbench.data import load_task
from mtrbench.judge.nuggets.prompts import ASSIGN_SYSTEM, CREATE_SYSTEM, LABEL_SYSTEM
from mtrbench.judge.nuggets.run import NuggetJudgeOptions, judge_nuggets
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig

GENERATIONS = Path(__file__).resolve().parents[1] / "data" / "generations-sample.jsonl"
QIDS = ["geo-01_1", "geo-01_2", "geo-01_3", "geo-01_4"]
# per model: the importance it gives every nugget, and the assignment
VERDICTS = {"nugget-m": ("vital", "support"), "nugget-n": ("okay", "not_support")}


def _nuggets_in(user: str) -> int:
    block = user.split("Nuggets:\n", 1)[1].split("\n\n", 1)[0]
    return len([line for line in block.splitlines() if re.match(r"\d+\. ", line)])


def scripted(body: dict) -> Reply:
    system, user, model = body["messages"][0]["content"], body["messages"][-1]["content"], body["model"]
    importance, assignment = VERDICTS[model]
    if system == CREATE_SYSTEM:
        return Reply(json.dumps([f"{model} says one", f"{model} says two"]))
    if system == LABEL_SYSTEM:
        return Reply(json.dumps([importance] * _nuggets_in(user)))
    assert system == ASSIGN_SYSTEM
    return Reply(json.dumps([assignment] * _nuggets_in(user)))


def _judge(out: Path, base_url: str, model: str):
    """Through the log in ``out`` and a response cache beside it: neither may answer for another model."""
    judge = JudgeConfig(name="j", model=model, base_url=base_url, max_retries=0, parse_retries=0)
    options = NuggetJudgeOptions(output_dir=out, yes=True, show_progress=False)
    cache = ResponseCache(out.parent / "cache.sqlite")
    return judge_nuggets([GENERATIONS], load_task("mtrbench-sample"), judge, options, cache=cache)


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_changed_judge_model_asks_every_step_again(tmp_path):
    out = tmp_path / "out"
    with ScriptedChatServer(scripted) as server:
        first = _judge(out, server.base_url, "nugget-m")
        assert first is not None and server.request_count == 12  # per turn: create, label, assign
        again = _judge(out, server.base_url, "nugget-m")
        assert again is not None and server.request_count == 12  # the log answers every step
        other = _judge(out, server.base_url, "nugget-n")
        assert other is not None and server.request_count == 24 and other.sent == 12
        assert {r["model"] for r in server.requests[12:]} == {"nugget-n"}
    created = _read(out / "nuggets.jsonl")
    assert [r["qid"] for r in created] == QIDS
    for record in created:
        assert [(n["text"], n["importance"]) for n in record["nuggets"]] == [
            ("nugget-n says one", "okay"),
            ("nugget-n says two", "okay"),
        ]
    [run] = other.assignments
    assert {n["assignment"] for r in _read(out / "assignments" / f"{run}.jsonl") for n in r["nuggets"]} == {
        "not_support"
    }
    [scores] = other.scores
    assert first.scores[0] != scores
