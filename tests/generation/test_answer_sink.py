"""generate's answer stage runs without a stage log: its records reach the generations file through AnswerSink, in
that file's own layout."""

from __future__ import annotations

import json

import pytest
from llm_server import Reply, ScriptedChatServer

from mtrbench.generation.store import AnswerSink, GenerationStore
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.stage import Stage, StageItem, StageOptions, run_stage
from mtrbench.llm.types import ChatRequest

KEY_ENV = "MTRBENCH_TEST_ANSWER_SINK_KEY"
SECRET = "mtrbench-answer-sink-secret-0c4f"
OPTIONS = StageOptions(yes=True, show_progress=False)


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)


def echo(body: dict) -> Reply:
    """'say k' is answered 'said k'; 'say bad' gets HTTP 503."""
    key = body["messages"][0]["content"].split()[-1]
    return Reply("busy", status=503) if key == "bad" else Reply(f"said {key}")


def echo_stage(server: ScriptedChatServer, keys: tuple[str, ...]) -> Stage:
    judge = JudgeConfig(
        name="j", model="m", base_url=server.base_url, api_key_env=KEY_ENV, max_retries=0, parse_retries=0
    )
    items = [
        StageItem(k, ChatRequest(key=k, messages=[{"role": "user", "content": f"say {k}"}]), fields={"qid": k})
        for k in keys
    ]
    return Stage("generate", judge, items, settings={"model": "m"}, unit="turns")


def test_answers_go_to_the_generations_file_in_its_layout_and_failures_apart(tmp_path):
    store = GenerationStore(tmp_path / "g.generations.jsonl")
    with ScriptedChatServer(echo) as server:
        stage = echo_stage(server, ("a", "bad", "c"))
        sink = AnswerSink(store, [stage.judge])
        with store.hold(), store:
            _, run = run_stage(stage, None, OPTIONS, on_record=sink)
        assert server.request_count == 3
    records = [json.loads(line) for line in store.path.read_text().splitlines()]
    assert sorted(r["qid"] for r in records) == ["a", "c"]
    for record in records:
        assert list(record) == ["qid", "answer", "cached", "time"]
        assert (record["answer"], record["cached"]) == (f"said {record['qid']}", False)
    assert sink.answered == 2 and [r.key for r in sink.failed] == ["bad"]
    assert sink.failed[0].error.startswith("HTTP 503")
    assert run.log_path is None and SECRET not in store.path.read_text()
    assert set(store.read({}).done) == {"a", "c"}  # what a rerun leaves out
