"""Stage logs other than StageLog (mtrbench.llm.stage.RecordLog): NoLog, and generate's generations file."""

from __future__ import annotations

import json

import pytest
from llm_server import Reply, ScriptedChatServer

from mtrbench.generation.store import GenerationLog, GenerationStore
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.stage import NoLog, Stage, StageItem, StageOptions, run_stage
from mtrbench.llm.types import ChatRequest

KEY_ENV = "MTRBENCH_TEST_STAGE_LOGS_KEY"
SECRET = "mtrbench-stage-logs-secret-0c4f"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)


def echo_stage(server: ScriptedChatServer, keys: tuple[str, ...]) -> Stage:
    judge = JudgeConfig(
        name="j", model="m", base_url=server.base_url, api_key_env=KEY_ENV, max_retries=0, parse_retries=0
    )
    items = [
        StageItem(k, ChatRequest(key=k, messages=[{"role": "user", "content": f"say {k}"}]), fields={"qid": k})
        for k in keys
    ]
    return Stage("echo", judge, items, settings={"model": "m"}, unit="turns")


def echo(body: dict) -> Reply:
    key = body["messages"][0]["content"].split()[-1]
    return Reply("" if key == "bad" else f"said {key}", status=503 if key == "bad" else 200)


def test_no_log_asks_every_item_each_run_and_its_dry_run_names_no_file(capsys):
    options = StageOptions(yes=True, show_progress=False)
    with ScriptedChatServer(echo) as server:
        for _ in range(2):
            outcome, run = run_stage(echo_stage(server, ("a", "b")), NoLog(), options)
            assert sorted(r.value for r in outcome.asked_now) == ["said a", "said b"]
        assert server.request_count == 4
        _, dry = run_stage(echo_stage(server, ("a", "b")), NoLog(), StageOptions(dry_run=True))
        assert server.request_count == 4
    assert run.log_path is None and dry.dry_run is not None
    assert dry.dry_run.text.splitlines()[-1].startswith("dry run: 2 requests x 1 judge(s)")
    assert "already answered" not in capsys.readouterr().out


def test_a_generations_file_as_the_log_takes_answers_in_its_own_layout(tmp_path):
    store = GenerationStore(tmp_path / "g.generations.jsonl")
    with ScriptedChatServer(echo) as server, store.hold():
        stage = echo_stage(server, ("a", "bad"))
        log = GenerationLog(store, store.read({}), "echo", {"model": "m"})
        outcome, _ = run_stage(stage, log, StageOptions(yes=True, show_progress=False))
    [line] = store.path.read_text().splitlines()
    record = json.loads(line)
    assert list(record) == ["qid", "answer", "cached", "time"]
    assert (record["qid"], record["answer"], record["cached"]) == ("a", "said a", False)
    assert log.answered == 1 and [r.key for r in log.failed] == ["bad"]
    assert log.failed[0].error.startswith("HTTP 503")
    assert SECRET not in line
    # read back, the answered turn is the stage's record under its settings: not asked again
    with ScriptedChatServer(echo) as server, store.hold():
        again = GenerationLog(store, store.read({}), "echo", {"model": "m"})
        outcome, _ = run_stage(echo_stage(server, ("a", "bad")), again, StageOptions(yes=True, show_progress=False))
        assert server.request_count == 1
    assert outcome.records["a"].value == "said a" and [r.key for r in outcome.asked_now] == ["bad"]
