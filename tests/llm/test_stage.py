"""The LLM stage runner (mtrbench.llm.stage) against the scripted HTTP server: log, resume, settings, dry run, cost
confirmation, failure-rate exit, cut-short lines, legacy logs, and no secret in the log."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import replace

import pytest
from llm_server import Reply, ScriptedChatServer

from mtrbench.infra.errors import TooManyFailures, UserInputError
from mtrbench.llm.client import ChatClient
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.extract import extract_rating
from mtrbench.llm.stage import (
    Stage,
    StageItem,
    StageLog,
    StageOptions,
    StageRecord,
    arun_stages,
    combined_result,
    legacy_record,
    run_stage,
    run_stages,
)
from mtrbench.llm.types import ChatRequest, ChatResult

KEY_ENV = "MTRBENCH_TEST_STAGE_KEY"
SECRET = "mtrbench-stage-secret-5b7e21c9"
QUESTIONS = ("q1", "q2", "q3", "q4", "q5")


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)


def judge_at(server: ScriptedChatServer, **overrides) -> JudgeConfig:
    settings = dict(name="j", model="m", base_url=server.base_url, api_key_env=KEY_ENV, max_retries=0, parse_retries=0)
    settings.update(overrides)
    return JudgeConfig(**settings)


def rate_item(key: str) -> StageItem:
    request = ChatRequest(
        key=key,
        messages=[{"role": "user", "content": f"Rate {key}."}],
        parse=lambda text: extract_rating(text, 1, 10),
    )
    return StageItem(key, request, settings={"prompt_hash": f"hash-{key}"}, fields={"qid": key})


def rating_stage(judge: JudgeConfig, keys=QUESTIONS, mode: str = "rating") -> Stage:
    return Stage("test", judge, [rate_item(k) for k in keys], settings={"model": judge.model, "mode": mode})


def rating_by_key(body: dict) -> Reply:
    """q<n> is rated n; 'q3' is overloaded when the body says so."""
    key = re.search(r"Rate (q\d)", body["messages"][0]["content"]).group(1)
    return Reply(f"Rating: [[{key[1:]}]]")


def asked_keys(server: ScriptedChatServer) -> list[str]:
    return sorted(re.search(r"Rate (q\d)", b["messages"][0]["content"]).group(1) for b in server.requests)


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


OPTIONS = StageOptions(yes=True, show_progress=False)


def test_a_run_logs_one_record_per_item_in_the_one_layout(tmp_path):
    log = StageLog(tmp_path / "log.jsonl")
    with ScriptedChatServer(rating_by_key) as server:
        outcome, run = run_stage(rating_stage(judge_at(server)), log, OPTIONS)
        assert server.request_count == len(QUESTIONS)
    records = lines(log.path)
    assert sorted(r["key"] for r in records) == sorted(QUESTIONS)
    for record in records:
        n = int(record["key"][1:])
        assert (record["stage"], record["judge"], record["ok"], record["value"]) == ("test", "j", True, n)
        assert record["settings"] == {"model": "m", "mode": "rating", "prompt_hash": f"hash-{record['key']}"}
        assert record["qid"] == record["key"] and record["reply"] == f"Rating: [[{n}]]"
        assert (record["attempts"], record["cached"], record["malformed"]) == (1, False, [])
        assert list(record)[:5] == ["time", "stage", "key", "judge", "settings"]
    assert outcome.sent == len(QUESTIONS) and run.unreadable_log_lines == 0
    assert outcome.usage.requests == len(QUESTIONS) and outcome.failures().failed == 0


def test_resume_after_a_kill_asks_only_missing_and_failed_items(tmp_path):
    log = StageLog(tmp_path / "log.jsonl")

    def q2_down(body: dict) -> Reply:
        return Reply("busy", status=503) if "Rate q2" in body["messages"][0]["content"] else rating_by_key(body)

    with ScriptedChatServer(q2_down) as server:
        outcome, _ = run_stage(rating_stage(judge_at(server)), log, OPTIONS)
    assert not outcome.records["q2"].ok and outcome.records["q2"].error.startswith("HTTP 503")
    # a kill while q5's line was being written: its record is cut short, and q4's never came
    kept = [line for line in log.path.read_text().splitlines() if '"q4"' not in line]
    q5 = next(line for line in kept if '"q5"' in line)
    log.path.write_text("\n".join(line for line in kept if line != q5) + "\n" + q5[:30])
    with ScriptedChatServer(rating_by_key) as server:
        outcome, run = run_stage(rating_stage(judge_at(server)), log, OPTIONS)
        assert asked_keys(server) == ["q2", "q4", "q5"]
    assert run.unreadable_log_lines == 1 and outcome.sent == 3
    assert {k: r.value for k, r in outcome.records.items()} == {k: int(k[1:]) for k in QUESTIONS}
    raw = log.path.read_text().splitlines()
    assert raw[-4] == q5[:30]  # the cut-short line stays on its own line; every later line is a whole record
    assert all(json.loads(line)["ok"] for line in raw[-3:])
    with ScriptedChatServer(rating_by_key) as server:  # everything answered: nothing asked
        run_stage(rating_stage(judge_at(server)), log, OPTIONS)
        assert server.request_count == 0


def test_a_changed_setting_asks_again(tmp_path):
    log = StageLog(tmp_path / "log.jsonl")
    with ScriptedChatServer(rating_by_key) as server:
        run_stage(rating_stage(judge_at(server)), log, OPTIONS)
        run_stage(rating_stage(judge_at(server), mode="verdict"), log, OPTIONS)  # another mode
        assert server.request_count == 2 * len(QUESTIONS)
        run_stage(rating_stage(judge_at(server, model="m2")), log, OPTIONS)  # another model
        assert server.request_count == 3 * len(QUESTIONS)
        changed = rating_stage(judge_at(server))
        changed = Stage(changed.name, changed.judge, [*changed.items[:4], rate_item("q5b")], changed.settings)
        run_stage(changed, log, OPTIONS)  # only the new item
        assert server.request_count == 3 * len(QUESTIONS) + 1
        run_stage(Stage("other", changed.judge, changed.items, changed.settings), log, OPTIONS)  # another stage
        assert server.request_count == 4 * len(QUESTIONS) + 1


def test_dry_run_asks_nothing_and_reports_what_it_would(tmp_path, capsys):
    log = StageLog(tmp_path / "log.jsonl")
    with ScriptedChatServer(rating_by_key) as server:
        run_stage(rating_stage(judge_at(server), keys=("q1", "q2")), log, OPTIONS)
        _, run = run_stage(rating_stage(judge_at(server)), log, StageOptions(dry_run=True, show_progress=False))
        assert server.request_count == 2
    report = run.dry_run
    assert (report.pending, report.answered, report.total) == (3, 2, 5)
    assert "dry run: 3 requests x 1 judge(s) = 3 chat completions; nothing was sent" in report.text
    assert f"2 of 5 items already answered in {log.path}" in report.text
    assert "Rate q3." in report.text and "Rate q1." not in report.text  # only pending prompts shown
    assert report.text in capsys.readouterr().out  # reported to the person running it (the CLI shows it)
    assert len(lines(log.path)) == 2


def test_refused_cost_confirmation_asks_nothing(tmp_path, monkeypatch, capsys):
    log = StageLog(tmp_path / "log.jsonl")
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    with ScriptedChatServer(rating_by_key) as server:
        with pytest.raises(UserInputError, match="--yes"):
            run_stage(rating_stage(judge_at(server)), log, StageOptions(show_progress=False))
        monkeypatch.setattr("sys.stdin.isatty", lambda: True)
        monkeypatch.setattr("builtins.input", lambda prompt: "n")
        with pytest.raises(UserInputError, match="not confirmed"):
            run_stage(rating_stage(judge_at(server)), log, StageOptions(show_progress=False))
        assert server.request_count == 0
    assert "LLM cost estimate" in capsys.readouterr().out
    assert not log.path.exists()


def test_failure_rate_exit_names_the_most_common_reason(tmp_path):
    log = StageLog(tmp_path / "log.jsonl")

    def mostly_down(body: dict) -> Reply:
        content = body["messages"][0]["content"]
        if "Rate q1" in content:
            return Reply("Rating: [[1]]")
        if "Rate q2" in content:
            return Reply("no rating here")  # one unparseable reply
        return Reply("busy", status=503)  # three overloaded

    options = StageOptions(yes=True, show_progress=False, max_failure_rate=0.5)
    with ScriptedChatServer(mostly_down) as server:
        with pytest.raises(TooManyFailures) as raised:
            run_stage(rating_stage(judge_at(server)), log, options)
    message = str(raised.value)
    assert "judge 'j' failed on 4 of 5 items (80% > --max-failure-rate 0.5" in message
    assert re.search(r"most common: HTTP 503[^;]*\(3\)", message)
    assert len(lines(log.path)) == 5  # every reply was logged before the exit


def test_legacy_logs_are_read_and_resumed(tmp_path):
    """Records of the judge engine's and MTRAG's layouts (no stage, no settings) answer items with the same
    values under the same names; one with another prompt hash does not."""
    log = StageLog(tmp_path / "judgments.jsonl")
    old = [
        # the judge engine's layout: item fields, then judge, model, ok, value, error, reply, attempts, ...
        {"time": "2025-01-01T00:00:00+00:00", "key": "q1", "qid": "q1", "mode": "rating", "prompt_hash": "hash-q1",
         "judge": "j", "model": "m", "ok": True, "value": 7, "error": None, "reply": "Rating: [[7]]", "attempts": 1,
         "cached": False, "malformed": []},
        {"time": "2025-01-01T00:00:00+00:00", "key": "q2", "qid": "q2", "mode": "rating", "prompt_hash": "stale",
         "judge": "j", "model": "m", "ok": True, "value": 9, "error": None, "reply": "Rating: [[9]]", "attempts": 1,
         "cached": False, "malformed": []},
        {"time": "2025-01-01T00:00:00+00:00", "key": "q3", "qid": "q3", "mode": "rating", "prompt_hash": "hash-q3",
         "judge": "j", "model": "m", "ok": False, "value": None, "error": "timeout after 1 attempts", "reply": None,
         "attempts": 1, "cached": False, "malformed": []},
    ]  # fmt: skip
    log.path.write_text("".join(json.dumps(r) + "\n" for r in old))
    with ScriptedChatServer(rating_by_key) as server:
        outcome, _ = run_stage(rating_stage(judge_at(server), keys=("q1", "q2", "q3")), log, OPTIONS)
        assert asked_keys(server) == ["q2", "q3"]  # q2: another prompt; q3: failed
    assert outcome.records["q1"].legacy and outcome.records["q1"].value == 7
    assert (outcome.records["q2"].value, outcome.records["q3"].value) == (2, 3)

    mtrag = tmp_path / "llm_judgments.jsonl"  # MTRAG's layout: key, step, task_id, judge, model, prompt_hash, ...
    mtrag.write_text(
        json.dumps(
            {"time": "t", "key": "RB_llm|t1|j", "step": "RB_llm", "task_id": "t1", "judge": "j", "model": "m",
             "prompt_hash": "h", "ok": True, "value": 0.8, "error": None, "reply": "4"}
        ) + "\n"
    )  # fmt: skip
    [record] = StageLog(mtrag).read().records
    assert record.matches("mtrag", {"model": "m", "prompt_hash": "h"}) and record.value == 0.8
    assert not record.matches("mtrag", {"model": "m2", "prompt_hash": "h"})
    assert StageRecord.from_json(record.to_json()) is not None


def test_no_api_key_in_the_log(tmp_path):
    log = StageLog(tmp_path / "log.jsonl")
    echo = f"Rating: [[5]] (my key is {SECRET})"
    with ScriptedChatServer([Reply(echo), Reply(f"error for key {SECRET}", status=400)]) as server:
        stage = rating_stage(judge_at(server, concurrency=1), keys=("q1", "q2"))
        outcome, _ = run_stage(stage, log, OPTIONS)
    text = log.path.read_text()
    assert SECRET not in text and "[redacted]" in text
    assert sorted(r.ok for r in outcome.records.values()) == [False, True]


@pytest.mark.parametrize("short_key", ["k", "q", "test"])
def test_a_short_api_key_never_rewrites_the_log_s_names_or_item_keys(tmp_path, monkeypatch, short_key):
    # "q" is in every item key, "k" in the field names "key" and "malformed", "test" is the stage's name
    monkeypatch.setenv(KEY_ENV, short_key)
    log = StageLog(tmp_path / "log.jsonl")
    with ScriptedChatServer(rating_by_key) as server:
        run_stage(rating_stage(judge_at(server)), log, OPTIONS)
    records = lines(log.path)
    assert sorted(r["key"] for r in records) == sorted(QUESTIONS)
    assert all(r["stage"] == "test" and r["ok"] and "malformed" in r for r in records)
    with ScriptedChatServer(rating_by_key) as server:  # resumed: every item is already answered
        outcome, _ = run_stage(rating_stage(judge_at(server)), log, OPTIONS)
        assert server.request_count == 0
    assert {k: r.value for k, r in outcome.records.items()} == {k: int(k[1:]) for k in QUESTIONS}


def test_a_reply_whose_value_is_not_finite_is_malformed_and_asked_again(tmp_path):
    # json.loads reads NaN and Infinity: such a value never reaches the log or a score, it is asked again
    item = StageItem("q1", ChatRequest(key="q1", messages=[{"role": "user", "content": "Rate q1."}], parse=json.loads))
    log = StageLog(tmp_path / "log.jsonl")
    replies = [Reply('{"score": NaN}'), Reply("[1, Infinity]"), Reply('{"score": 7}')]
    with ScriptedChatServer(replies) as server:
        stage = Stage("test", judge_at(server, parse_retries=2), [item])
        outcome, _ = run_stage(stage, log, OPTIONS)
        assert server.request_count == 3
    record = outcome.records["q1"]
    assert record.ok and record.value == {"score": 7} and [m["attempt"] for m in record.malformed] == [1, 2]
    assert "not finite" in record.malformed[0]["reason"]
    with ScriptedChatServer([Reply('{"score": NaN}')]) as server:  # no re-ask left: a failure, logged without NaN
        stage = Stage("test", judge_at(server), [StageItem("q2", replace(item.request, key="q2"))])
        outcome, _ = run_stage(stage, log, OPTIONS)
    assert not outcome.records["q2"].ok and outcome.records["q2"].value is None
    assert [r["value"] for r in lines(log.path) if r["key"] == "q2"] == [None]

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in the log")

    for line in log.path.read_text().splitlines():  # the reply texts keep the word, no number is NaN
        json.loads(line, parse_constant=refuse)


def test_async_items_with_several_requests_share_the_log_and_resume(tmp_path):
    """An item asked through its own coroutine (two requests each) is logged once, and resumed like any other."""
    log = StageLog(tmp_path / "log.jsonl")

    async def twice(client: ChatClient, stage: Stage, item: StageItem) -> ChatResult:
        first = await client.acomplete(item.request)
        second = await client.acomplete(item.request)
        value = (first.value or 0) + (second.value or 0) if first.ok and second.ok else None
        return combined_result(item.key, [first, second], value)

    async def run(server: ScriptedChatServer, keys) -> object:
        judge = judge_at(server)
        client = ChatClient(judge)
        try:
            return await arun_stages(
                [rating_stage(judge, keys=keys)], log, OPTIONS, lambda s, i: twice(client, s, i), concurrency=2
            )
        finally:
            await client.aclose()

    with ScriptedChatServer(rating_by_key) as server:
        first = asyncio.run(run(server, ("q1", "q2")))
        assert server.request_count == 4
    with ScriptedChatServer(rating_by_key) as server:
        again = asyncio.run(run(server, ("q1", "q2", "q3")))
        assert asked_keys(server) == ["q3", "q3"]
    assert {k: r.value for k, r in first.outcomes[0].records.items()} == {"q1": 2, "q2": 4}
    record = again.outcomes[0].records["q3"]
    assert (record.value, record.attempts, record.prompt_tokens) == (6, 2, 2 * Reply().prompt_tokens)
    assert len(lines(log.path)) == 3


def test_stages_of_several_judges_share_one_log_and_one_cost_question(tmp_path, capsys):
    log = StageLog(tmp_path / "log.jsonl")
    with ScriptedChatServer(rating_by_key) as server:
        a, b = judge_at(server, name="a"), judge_at(server, name="b", model="m2")
        run = run_stages([rating_stage(a), rating_stage(b, keys=("q1",))], log, OPTIONS)
        assert server.request_count == len(QUESTIONS) + 1
    out = capsys.readouterr().out
    assert (
        out.count("LLM cost estimate") == 1 and re.search(r"\ba\s+m\s+5\b", out) and re.search(r"\bb\s+m2\s+1\b", out)
    )
    assert [o.sent for o in run.outcomes] == [5, 1]
    assert sorted((r["judge"], r["key"]) for r in lines(log.path)) == sorted(
        [("a", k) for k in QUESTIONS] + [("b", "q1")]
    )


def test_without_a_log_every_item_is_asked_and_each_record_reaches_the_sink(tmp_path):
    """A path that keeps its results itself (eval's rewriter in memory, generate's store) runs with no log."""
    taken: list[StageRecord] = []
    with ScriptedChatServer(rating_by_key) as server:
        for _ in range(2):
            outcome, run = run_stage(rating_stage(judge_at(server)), None, OPTIONS, on_record=taken.append)
        assert server.request_count == 2 * len(QUESTIONS)
    assert run.log_path is None and list(tmp_path.iterdir()) == []
    assert sorted((r.key, r.value) for r in taken) == sorted([(k, int(k[1:])) for k in QUESTIONS] * 2)
    assert {k: r.value for k, r in outcome.records.items()} == {k: int(k[1:]) for k in QUESTIONS}


def test_a_path_reads_its_own_older_layout(tmp_path):
    """An older layout without ``key``/``value`` (the audit's: dimension, instance_id, parsed) is read by the
    reader its path hands to the log."""

    def audit_layout(raw):
        if "dimension" not in raw:
            return None
        fields = {**raw, "value": raw.get("parsed")}
        return legacy_record({**fields, "key": f"{raw['dimension']}|{raw['instance_id']}"})

    path = tmp_path / "log.jsonl"
    path.write_text(
        json.dumps({"dimension": "d", "instance_id": "q1", "judge": "j", "model": "m", "prompt_hash": "hash-q1",
                    "mode": "rating", "ok": True, "parsed": 4, "score": 4.0}) + "\n"
    )  # fmt: skip
    with ScriptedChatServer(rating_by_key) as server:
        stage = rating_stage(judge_at(server), keys=("q1", "q2"))
        stage = Stage(
            stage.name,
            stage.judge,
            [replace(i, key=f"d|{i.key}", request=replace(i.request, key=f"d|{i.key}")) for i in stage.items],
            stage.settings,
        )
        outcome, _ = run_stage(stage, StageLog(path, legacy=audit_layout), OPTIONS)
        assert server.request_count == 1
    assert (outcome.records["d|q1"].value, outcome.records["d|q2"].value) == (4, 2)
