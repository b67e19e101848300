"""`mtrbench simulate run` against the scripted chat server (the user) and a system behind the HTTP contract
started on 127.0.0.1: exact transcripts, clarifying questions, patience, failures, resume, seeds, bad input.

Every expected transcript is written out by hand from the scripts in scripts.py and the task in conftest.py."""

from __future__ import annotations

import json

import pytest
from cli_run import run_cli
from contract_server import ContractServer
from llm_server import Reply, ScriptedChatServer
from scripts import exchanges, need_questions, system_by_keyword, user_in_order

from mtrbench.data import card_for_folder, load_task
from mtrbench.data.model import TaskData
from mtrbench.infra.errors import UserInputError
from mtrbench.llm.config import JudgeConfig
from mtrbench.simulate.needs import needs_from_task
from mtrbench.simulate.profiles import parse_profile
from mtrbench.simulate.session import SessionOptions, run_sessions
from mtrbench.simulate.systems import HttpSystem

Q = {
    "lake": ["How deep is Lake Varnholm?", "Which fish live in Lake Varnholm?"],
    "bridge": ["Who designed the Orrin Bridge?", "When did the Orrin Bridge open?"],
}


def simulate(task, user_url, system_url, out, *extra):
    return run_cli(
        "simulate", "run", "--task", str(task), "--user-model", "sim", "--user-base-url", user_url,
        "--system-url", system_url, "--output-dir", str(out), "--no-llm-cache", "--yes", "--quiet", *extra,
    )  # fmt: skip


def sessions(out):
    return {r["session_id"]: r for r in map(json.loads, (out / "sessions.jsonl").read_text().splitlines())}


def test_exact_transcripts_and_the_task_view_other_commands_read(two_needs, tmp_path):
    out = tmp_path / "run"
    with ScriptedChatServer(user_in_order) as user, ContractServer(system_by_keyword) as system:
        proc = simulate(two_needs, user.base_url, system.url, out)
    assert proc.returncode == 0, proc.stderr
    assert len(user.requests) == 6 and len(system.requests) == 4  # 3 user turns and 2 system turns per need
    lake = sessions(out)["lake"]
    assert lake["status"] == "satisfied" and lake["closing"] == "Thank you."
    assert [(t["turn"], t["utterance"], t["response"], [p["id"] for p in t["passages"]]) for t in lake["turns"]] == [
        (1, Q["lake"][0], f"answer to: {Q['lake'][0]}", ["lake-depth", "lake-age"]),
        (2, Q["lake"][1], f"answer to: {Q['lake'][1]}", ["lake-fish", "lake-depth"]),
    ]
    second = next(r for r in system.requests if r["session_id"] == "lake" and r["turn"] == 2)
    assert second == {
        "session_id": "lake", "turn": 2, "utterance": Q["lake"][1],
        "history": [{"role": "user", "content": Q["lake"][0]},
                    {"role": "assistant", "content": f"answer to: {Q['lake'][0]}"}],
    }  # fmt: skip
    conversations = [json.loads(line) for line in (out / "conversations" / "test.jsonl").read_text().splitlines()]
    qrels = [{"doc_id": "lake-depth", "score": 2}, {"doc_id": "lake-fish", "score": 1}]
    assert conversations[0]["messages"] == [
        {"role": "user", "content": Q["lake"][0], "qrels": qrels},
        {"role": "assistant", "content": f"answer to: {Q['lake'][0]}"},
        {"role": "user", "content": Q["lake"][1], "qrels": qrels},
        {"role": "assistant", "content": f"answer to: {Q['lake'][1]}"},
    ]
    task = load_task(card_for_folder(out))  # the transcripts are a task every command reads
    assert [q.qid for q in task.queries] == ["lake_1", "lake_2", "bridge_1", "bridge_2"]
    assert task.queries[1].history[1].content == f"answer to: {Q['lake'][0]}"
    assert len(task.corpus) == 6


def test_a_clarifying_question_is_answered_from_the_need(two_needs, tmp_path):
    asked = []

    def user(body):
        task = body["messages"][-1]["content"]
        if "The assistant asked you a question" in task:
            asked.append(task)
            return Reply(f"I mean: {need_questions(body)[0]}")  # the answer comes from the need the prompt states
        return user_in_order(body)

    def system(body):
        if body["turn"] == 1:
            return 200, {"response": "", "passages": [], "clarifying_question": "Which lake or bridge do you mean?"}
        return system_by_keyword(body)

    out = tmp_path / "run"
    with ScriptedChatServer(user) as chat, ContractServer(system) as contract:
        proc = simulate(two_needs, chat.base_url, contract.url, out, "--limit", "1")
    assert proc.returncode == 0, proc.stderr
    assert len(asked) == 1 and "Assistant: Which lake or bridge do you mean?" in asked[0]
    assert "- How deep is Lake Varnholm?" in chat.requests[1]["messages"][0]["content"]  # the need it answers from
    turns = sessions(out)["lake"]["turns"]
    assert turns[0]["clarifying_question"] == "Which lake or bridge do you mean?"
    assert turns[1]["utterance"] == f"I mean: {Q['lake'][0]}"
    assert contract.requests[1]["history"][1] == {"role": "assistant", "content": "Which lake or bridge do you mean?"}


def test_patience_ends_a_session(two_needs, tmp_path):
    out = tmp_path / "run"
    with ScriptedChatServer(lambda b: user_in_order(b, done=False)) as user, ContractServer(system_by_keyword) as s:
        proc = simulate(two_needs, user.base_url, s.url, out, "--profile", "impatient", "--max-turns", "2")
    assert proc.returncode == 0, proc.stderr
    for record in sessions(out).values():
        assert record["status"] == "abandoned" and len(record["turns"]) == 2
        assert record["closing"].startswith("Again: ")  # its last message, never answered
    assert len(s.requests) == 4 and len(user.requests) == 6  # 2 system turns; 2 + 1 last user turn per need
    summary = json.loads((out / "simulate.json").read_text())
    assert summary["profile"] == {"cooperation": "cooperative", "patience": "impatient", "wording": "expert",
                                  "max_turns": 2}  # fmt: skip


def test_failed_system_turns_are_recorded_and_counted(two_needs, tmp_path):
    def system(body):
        if body["session_id"] == "bridge":
            return 200, "{not json"
        return system_by_keyword(body)

    with ScriptedChatServer(user_in_order) as user, ContractServer(system) as contract:
        over = simulate(two_needs, user.base_url, contract.url, tmp_path / "a", "--max-failure-rate", "0.25")
        within = simulate(two_needs, user.base_url, contract.url, tmp_path / "b", "--max-failure-rate", "0.5")
    lines = over.stderr.strip().splitlines()
    assert over.returncode == 1 and len(lines) == 1 and lines[0].startswith("error: system 'system' failed on 2 of 4")
    assert "malformed JSON in the reply (2)" in lines[0]
    assert within.returncode == 0, within.stderr
    bridge = sessions(tmp_path / "a")["bridge"]
    assert [(t["ok"], t["error"], t["passages"]) for t in bridge["turns"]] == [
        (False, "malformed JSON in the reply", [])
    ] * 2
    assert bridge["status"] == "satisfied"  # the user moved on after a turn without an answer
    assert any("Assistant: (the assistant did not answer)" in r["messages"][-1]["content"] for r in user.requests)


@pytest.mark.parametrize(("payload", "reason"), [
    ((500, {"error": "boom"}), "HTTP 500"),
    ((200, {"response": "x", "passages": [{"id": "d", "score": "high"}]}),
     "reply breaks the contract: passages[0] needs a finite number 'score'"),
])  # fmt: skip
def test_a_system_error_is_a_failed_turn_with_its_reason(two_needs, tmp_path, monkeypatch, payload, reason):
    monkeypatch.setenv("NO_KEY_NEEDED", "x")
    task = load_task(card_for_folder(two_needs))
    with ScriptedChatServer(user_in_order) as user, ContractServer(lambda b: payload) as contract:
        run = run_sessions(needs_from_task(task, 1), HttpSystem(contract.url), _judge(user.base_url),
                           _options(tmp_path))  # fmt: skip
    assert [t.reply.error for t in run.sessions[0].turns] == [reason, reason]
    assert (run.system_failures.failed, run.system_failures.total) == (2, 2)


def _options(folder):
    return SessionOptions(folder, parse_profile(""), yes=True, show_progress=False)


def _judge(url):
    return JudgeConfig(name="user", model="sim", base_url=url, api_key_env="NO_KEY_NEEDED", max_retries=0)


class KilledAt:
    """A system that is killed (KeyboardInterrupt) as its ``n``-th request is about to be sent."""

    def __init__(self, inner, n):
        self.inner, self.n, self.calls = inner, n, 0

    def settings(self):
        return self.inner.settings()

    def respond(self, request):
        self.calls += 1
        if self.calls == self.n:
            raise KeyboardInterrupt
        return self.inner.respond(request)


def test_resume_after_a_kill_repeats_no_request(two_needs, tmp_path, monkeypatch):
    monkeypatch.setenv("NO_KEY_NEEDED", "x")
    needs = needs_from_task(load_task(card_for_folder(two_needs)))
    options = _options(tmp_path / "killed")
    with ScriptedChatServer(user_in_order) as first, ContractServer(system_by_keyword) as first_system:
        with pytest.raises(KeyboardInterrupt):
            run_sessions(needs, KilledAt(HttpSystem(first_system.url), 3), _judge(first.base_url), options)
    with ScriptedChatServer(user_in_order) as second, ContractServer(system_by_keyword) as second_system:
        resumed = run_sessions(needs, HttpSystem(second_system.url), _judge(second.base_url), options)
    with ScriptedChatServer(user_in_order) as whole, ContractServer(system_by_keyword) as whole_system:
        full = run_sessions(needs, HttpSystem(whole_system.url), _judge(whole.base_url),
                            _options(tmp_path / "whole"))  # fmt: skip
    asked = [json.dumps(r["messages"]) for r in first.requests + second.requests]
    assert len(first.requests) == 4 and len(second.requests) == 2  # two rounds before the kill, one after
    assert sorted(asked) == sorted(json.dumps(r["messages"]) for r in whole.requests)  # each asked exactly once
    turns = [(r["session_id"], r["turn"]) for r in first_system.requests + second_system.requests]
    assert sorted(turns) == sorted((r["session_id"], r["turn"]) for r in whole_system.requests)
    assert len(turns) == len(set(turns)) == 4
    assert [s.turns for s in resumed.sessions] == [s.turns for s in full.sessions]


def test_the_same_seed_gives_identical_transcripts(two_needs, tmp_path):
    with ScriptedChatServer(user_in_order) as user, ContractServer(system_by_keyword) as system:
        for name in ("a", "b"):
            assert simulate(two_needs, user.base_url, system.url, tmp_path / name, "--seed", "7").returncode == 0
    assert {r.get("seed") for r in user.requests} == {7}  # the seed reaches the model with every request
    assert (tmp_path / "a" / "sessions.jsonl").read_bytes() == (tmp_path / "b" / "sessions.jsonl").read_bytes()
    assert exchanges(user.requests[-1]) == 2


def test_bad_input_is_one_error_line(two_needs, tmp_path):
    personas = tmp_path / "personas.jsonl"
    personas.write_text('{"need_id": "lake", "persona": ["I fish."]}\n{"need_id": "bridge", "persona": "x"\n')
    proc = run_cli("simulate", "run", "--task", str(two_needs), "--user-model", "m", "--personas", str(personas),
                   "--output-dir", str(tmp_path / "o"), "--yes")  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [f"error: {personas} line 2: not JSON "
                                                                         "(Expecting ',' delimiter)"]  # fmt: skip
    (tmp_path / "empty" / "conversations").mkdir(parents=True)
    (tmp_path / "empty" / "corpus.jsonl").write_text((two_needs / "corpus.jsonl").read_text())
    (tmp_path / "empty" / "conversations" / "test.jsonl").write_text("")
    proc = run_cli("simulate", "run", "--task", str(tmp_path / "empty"), "--user-model", "m", "--output-dir",
                   str(tmp_path / "o"), "--yes")  # fmt: skip
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "is empty" in proc.stderr
    task = load_task(card_for_folder(two_needs))
    with pytest.raises(UserInputError, match="has no information needs"):
        needs_from_task(TaskData(task.name, task.split, task.corpus, []))
    proc = run_cli("simulate", "run", "--user-model", "m", "--profile", "patient,shy", "--output-dir", str(tmp_path))
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "error: --profile: unknown behaviour 'shy' (one of cooperative, terse, patient, impatient, expert, novice)"
    )


def test_a_dry_run_shows_the_first_prompts_and_sends_nothing(two_needs, tmp_path):
    out = tmp_path / "run"
    with ScriptedChatServer(user_in_order) as user:
        proc = run_cli("simulate", "run", "--task", str(two_needs), "--user-model", "sim", "--user-base-url",
                       user.base_url, "--output-dir", str(out), "--dry-run", "--quiet")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert user.requests == [] and not out.exists()
    assert "- How deep is Lake Varnholm?" in proc.stdout and "dry run: 2 requests" in proc.stdout


def test_user_simulator_failures_end_their_session_and_count(two_needs, tmp_path):
    def user(body):
        if "- Who designed the Orrin Bridge?" in body["messages"][0]["content"]:
            return Reply(status=400, content="bad request")  # not retried: a failed item
        return user_in_order(body)

    with ScriptedChatServer(user) as chat, ContractServer(system_by_keyword) as contract:
        proc = simulate(two_needs, chat.base_url, contract.url, tmp_path / "run", "--max-failure-rate", "0.2")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1
    assert lines[0].startswith("error: user simulator 'user' failed on 1 of 4 turns")  # lake: 3 replies, bridge: 1
    bridge = sessions(tmp_path / "run")["bridge"]
    assert bridge["status"] == "user_failed" and bridge["turns"] == [] and bridge["user_error"]
    assert [r["session_id"] for r in contract.requests] == ["lake", "lake"]
