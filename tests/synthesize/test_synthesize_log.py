"""Synthesize's conversation log through the LLM stage runner (mtrbench.llm.stage): the one record layout, a log
of the layout before it resumed, --max-cost stopping new conversations, and every agent's secret kept out.

Stage 3 (run_generate) on two hand-made clusters against a scripted server on 127.0.0.1.
"""

from __future__ import annotations

import json

from llm_server import Reply, ScriptedChatServer

from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.stage import RECORD_FIELDS
from mtrbench.synthesize.curate import Chunk
from mtrbench.synthesize.generate import (
    LOG,
    Agents,
    GenerateOptions,
    finished_conversations,
    plan_digest,
    run_generate,
)
from mtrbench.synthesize.plan import PlanOptions

CHUNKS = [
    Chunk(f"{name}-{i}", f"doc-{name}", name, f"The {name} river, section {i}, flows north for {10 * i} km.")
    for name in ("alpha", "beta")
    for i in range(1, 4)
]
CLUSTERS = [[c.chunk_id for c in CHUNKS if c.title == name] for name in ("alpha", "beta")]
QUESTION = "How far does the river in section 1 flow?"
ANSWER = "The river in section 1 flows north for ten kilometres, as the document says."
REWRITE = "and how far does it flow?"
UPSTREAM = "hand-made"
PLAN = PlanOptions(conversations=2, turns=1, hard_switches=0)


def agent_replies(body: dict, question: str = QUESTION, garble_beta: bool = False) -> Reply:
    system, last = body["messages"][0]["content"], body["messages"][-1]["content"]
    if system.startswith("You play the user"):
        if garble_beta and "The beta river" in last:
            return Reply("Sure! Here is a question about the river.")
        return Reply(f"[Document 1] {question}", prompt_tokens=100_000)
    if system.startswith("You are the assistant"):
        return Reply(ANSWER)
    return Reply(f"Rewritten: {REWRITE}")


def agents_at(server: ScriptedChatServer, key_envs: dict[str, str] | None = None) -> Agents:
    def judge(name: str) -> JudgeConfig:
        return JudgeConfig(
            name=name,
            model=f"{name}-model",
            base_url=server.base_url,
            api_key_env=(key_envs or {}).get(name, "MTRBENCH_NO_KEY"),
            temperature=0.7,
            max_retries=0,
            parse_retries=0,
            concurrency=1,
        )

    return Agents(judge("questioner"), judge("responder"), judge("polisher"))


def generate(server: ScriptedChatServer, folder, agents: Agents | None = None, **options):
    return run_generate(
        CHUNKS,
        CLUSTERS,
        folder,
        agents or agents_at(server),
        GenerateOptions(plan=PLAN, **options),
        upstream=UPSTREAM,
        show_progress=False,
    )


def log_lines(folder) -> list[dict]:
    return [json.loads(line) for line in (folder / LOG).read_text().splitlines() if line.strip()]


def test_each_conversation_is_one_record_of_the_one_layout(tmp_path):
    with ScriptedChatServer(lambda body: agent_replies(body, garble_beta=True)) as server:
        agents = agents_at(server)
        generate(server, tmp_path, agents)
    done, dropped = log_lines(tmp_path)  # concurrency 1: alpha's conversation first
    own = ["conversation_id", "cluster", "moves", "try", "status"]
    head, tail = list(RECORD_FIELDS[:5]), list(RECORD_FIELDS[5:])
    assert list(done) == head + own + ["turns"] + tail
    assert list(dropped) == head + own + ["reason", "reason_kind"] + tail
    digest = plan_digest(agents, PLAN, UPSTREAM)
    assert done["stage"] == "synthesize" and done["settings"] == {"plan_digest": digest}
    assert done["judge"] == "questioner/responder/polisher"
    assert (done["key"], done["conversation_id"], done["ok"], done["status"]) == (
        "synth-00000",
        "synth-00000",
        True,
        "done",
    )
    assert done["turns"] == [
        {
            "turn": 1,
            "switch": "start",
            "cluster": 0,
            "gold_chunk": "alpha-1",
            "standalone": QUESTION,
            "question": REWRITE,
            "answer": ANSWER,
        }
    ]
    assert (done["attempts"], done["prompt_tokens"], done["completion_tokens"]) == (3, 100_000 + 11 + 11, 3 * 7)
    assert (dropped["ok"], dropped["status"], dropped["reason_kind"]) == (False, "dropped", "malformed reply")
    assert dropped["error"] == dropped["reason"] and dropped["reason"].startswith("questioner: unparseable")
    [malformed] = dropped["malformed"]  # parse_retries 0: one reply, no re-ask
    assert malformed["agent"] == "questioner" and malformed["key"] == "synth-00001/t1/questioner"
    assert (malformed["attempt"], malformed["text"]) == (1, "Sure! Here is a question about the river.")


def test_a_log_written_before_the_one_layout_is_resumed(tmp_path):
    with ScriptedChatServer(agent_replies) as server:
        agents = agents_at(server)
        turns = [
            {
                "turn": 1,
                "switch": "start",
                "cluster": 0,
                "gold_chunk": "alpha-2",
                "standalone": "Where does the alpha river flow?",
                "question": "where does it go?",
                "answer": "North.",
            }
        ]
        old = {
            "conversation_id": "synth-00000",
            "plan_digest": plan_digest(agents, PLAN, UPSTREAM),
            "cluster": 0,
            "moves": ["start"],
            "try": 1,
            "malformed": [],
            "time": "2025-01-01T00:00:00+00:00",
            "status": "done",
            "turns": turns,
        }
        other_settings = {**old, "conversation_id": "synth-00001", "plan_digest": "another-plan"}
        (tmp_path / LOG).write_text(json.dumps(old) + "\n" + json.dumps(other_settings) + "\n")
        report = generate(server, tmp_path, agents)
        assert server.request_count == 3  # synth-00001 alone: its old record was made under other settings
    assert (report.finished, report.planned) == (2, 2)
    assert finished_conversations(tmp_path, plan_digest(agents, PLAN, UPSTREAM)) == [
        {"conversation_id": "synth-00000", "turns": turns},
        {"conversation_id": "synth-00001", "turns": log_lines(tmp_path)[-1]["turns"]},
    ]


def test_max_cost_starts_no_conversation_once_spending_reached_it(tmp_path, capsys):
    # Estimate (seed's model): 2 x (3,000 x $0.24 + 80 x $0.38) / 1M = $0.0015008, under the cap. Spent after the
    # first conversation, at the seed's prices (the scripted models have none): questioner 100,000 prompt tokens,
    # so more than 100,000 x $0.24 / 1M = $0.024, over the cap: the second is never started.
    with ScriptedChatServer(agent_replies) as server:
        report = generate(server, tmp_path, max_cost_usd=0.002)
        assert server.request_count == 3
    assert report.stopped_by_cost and (report.finished, report.planned) == (1, 2)
    assert "stopped: --max-cost $0.0020 reached" in capsys.readouterr().out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["stopped_by_max_cost"] is True and summary["complete"] is False
    assert [r["conversation_id"] for r in log_lines(tmp_path)] == ["synth-00000"]


def test_no_agents_secret_reaches_the_log(tmp_path, monkeypatch):
    secrets = {name: f"{name}-secret-{i}f3a9c71e" for i, name in enumerate(("questioner", "responder", "polisher"))}
    key_envs = {name: f"MTRBENCH_TEST_SYNTH_{name.upper()}_KEY" for name in secrets}
    for name, env in key_envs.items():
        monkeypatch.setenv(env, secrets[name])
    # the questioner repeats the polisher's key: only the log's own redaction knows it is one
    question = f"What does {secrets['polisher']} unlock?"
    with ScriptedChatServer(lambda body: agent_replies(body, question=question)) as server:
        generate(server, tmp_path, agents_at(server, key_envs))
    text = (tmp_path / LOG).read_text()
    assert not any(secret in text for secret in secrets.values())
    assert log_lines(tmp_path)[0]["turns"][0]["standalone"] == "What does [redacted] unlock?"
