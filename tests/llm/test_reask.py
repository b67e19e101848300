"""Re-asking a malformed reply changes the request; timeouts back off longer than errors.

Against a real HTTP server on 127.0.0.1 (tests/llm_server.py) that answers malformed until the request
differs from the first one it got for the same item.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from llm_server import Reply, ScriptedChatServer

from mtrbench.llm import ChatClient, ChatRequest, JudgeConfig, extract_rating
from mtrbench.llm.reask import REASK_TEMPERATURE

KEY_ENV = "MTRBENCH_TEST_REASK_KEY"
SECRET = "mtrbench-reask-secret-8d1e4b"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)


class GoodOnlyIfChanged:
    """Per item (its first user message), the first request gets ``malformed``; a later request gets
    ``good(body)`` only if its body differs from that first one, else ``malformed`` again."""

    def __init__(self, good: Callable[[dict[str, Any]], str], malformed: str = "I think it is fine.") -> None:
        self.good = good
        self.malformed = malformed
        self.first: dict[str, str] = {}
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        item = next(m["content"] for m in body["messages"] if m["role"] == "user")
        serialized = json.dumps(body, sort_keys=True)
        with self.lock:
            first = self.first.setdefault(item, serialized)
        return Reply(self.malformed if serialized == first else self.good(body))


def make_client(server: ScriptedChatServer, **overrides: Any) -> ChatClient:
    settings = dict(
        name="judge-r",
        model="test-model",
        base_url=server.base_url,
        api_key_env=KEY_ENV,
        timeout_s=5.0,
        max_retries=3,
        parse_retries=2,
        concurrency=2,
        temperature=0.0,
    )
    settings.update(overrides)
    return ChatClient(JudgeConfig(**settings), backoff_base_s=0.01, backoff_max_s=0.05)


def rating_request(key: str) -> ChatRequest:
    return ChatRequest(
        key=key,
        messages=[{"role": "user", "content": f"Rate answer {key}."}],
        parse=lambda reply: extract_rating(reply, 1, 10),
        reply_format="Rating: [[N]], N from 1 to 10",
    )


def test_first_reask_is_a_repair_turn_quoting_the_reply_and_restating_the_format():
    with ScriptedChatServer(
        GoodOnlyIfChanged(lambda _body: "Rating: [[7]]", malformed=f"Looks good to me ({SECRET})."), show_repairs=True
    ) as server:
        client = make_client(server)
        [result] = client.run([rating_request("q1")], show_progress=False)
        first, second = server.requests
    assert (result.ok, result.value, result.attempts) == (True, 7.0, 2)
    assert second["messages"][:-1] == first["messages"]  # the original conversation, then one repair turn
    repair = second["messages"][-1]
    assert repair["role"] == "user"
    assert "> Looks good to me ([redacted])." in repair["content"]  # quoted, without the key
    assert "no rating found" in repair["content"]
    assert repair["content"].endswith("Rating: [[N]], N from 1 to 10")
    assert second["temperature"] == first["temperature"] == 0.0 and "seed" not in second
    # the malformed reply is kept for the caller's log, redacted
    assert [(m.attempt, m.text) for m in result.malformed] == [(1, "Looks good to me ([redacted]).")]
    assert SECRET not in json.dumps([m.as_dict() for m in result.malformed])


def test_a_further_reask_changes_the_seed_and_leaves_greedy_decoding():
    replies = iter(["no idea", "still no idea", "Rating: [[4]]"])
    with ScriptedChatServer(lambda _body: Reply(next(replies))) as server:
        client = make_client(server, extra_body={"seed": 11})
        [result] = client.run([rating_request("q1")], show_progress=False)
        bodies = server.requests
    assert (result.ok, result.value, len(bodies)) == (True, 4.0, 3)
    assert [b.get("seed") for b in bodies] == [11, 11, 12]
    assert [b["temperature"] for b in bodies] == [0.0, 0.0, REASK_TEMPERATURE]
    assert len({json.dumps(b, sort_keys=True) for b in bodies}) == 3  # no two requests alike
    assert [m.text for m in result.malformed] == ["no idea", "still no idea"]


def test_a_sampled_request_keeps_its_temperature_on_a_further_reask():
    replies = iter(["x", "y", "z"])
    with ScriptedChatServer(lambda _body: Reply(next(replies))) as server:
        [result] = make_client(server, temperature=0.4).run([rating_request("q1")], show_progress=False)
        bodies = server.requests
    assert not result.ok and result.error.startswith("unparseable after 3 attempts")
    assert [b["temperature"] for b in bodies] == [0.4, 0.4, 0.4]
    assert [b.get("seed") for b in bodies] == [None, None, 1]
    assert [m.attempt for m in result.malformed] == [1, 2, 3]


def _arrivals(responder: Callable[[dict[str, Any]], Reply], **overrides: Any) -> tuple[list[float], str]:
    times: list[float] = []

    def timed(body: dict[str, Any]) -> Reply:
        times.append(time.monotonic())
        return responder(body)

    with ScriptedChatServer(timed) as server:
        [result] = make_client(server, **overrides).run([rating_request("q1")], show_progress=False)
    return [b - a for a, b in zip(times, times[1:])], result.error or ""


def test_a_timed_out_request_is_not_resent_while_the_server_is_still_busy():
    # 0.2 s timeout, the server needs 0.6 s: each retry waits at least the timeout before re-sending, so
    # request starts are >= 0.2 (timeout) + 0.2 (backoff) apart; the error backoff alone is <= 0.05 s.
    gaps, error = _arrivals(lambda _body: Reply("Rating: [[3]]", delay_s=0.6), timeout_s=0.2, max_retries=2)
    assert error == "timeout after 3 attempts" and len(gaps) == 2
    assert min(gaps) >= 0.4
    error_gaps, error = _arrivals(lambda _body: Reply("busy", status=500), timeout_s=0.2, max_retries=2)
    assert error == "HTTP 500 after 3 attempts" and len(error_gaps) == 2
    assert max(error_gaps) < min(gaps) - 0.2


# -- every command's own requests succeed on their first re-ask ---------------------------------------------------


def _judge_requests():
    from mtrbench.judge.engine import JudgeItem, _requests
    from mtrbench.judge.prompts import TurnToJudge, verdict_messages

    turn = TurnToJudge(question="When was it built?", answer="In 1889.", reference="It was completed in 1889.")
    return _requests([JudgeItem("g|q1", "q1", "g", "RS", "task", 1, "verdict", verdict_messages(turn))])


def _audit_requests():
    from mtrbench.audit.log import audit_requests as _requests
    from mtrbench.audit.plan import COMPLETENESS, AuditItem
    from mtrbench.audit.prompts import ShownDocument, completeness_messages

    docs = [ShownDocument("A", "The tower was completed in 1889."), ShownDocument("B", "The statue dates from 1886.")]
    messages = completeness_messages([], "When was the tower completed?", docs)
    return _requests([AuditItem(COMPLETENESS, "i1", "q1", messages, ("d1", "d2"), gold_doc="d1")])


def _assess_requests():
    from mtrbench.assess.prompts import VERDICT_FORMAT, Case, agent_messages, parse_verdict

    case = Case("q1", "d1", "When was the tower completed?", ("1889",), "The tower was completed in 1889.")
    return [
        ChatRequest(
            "q1 | d1 | agent-a | round 1",
            agent_messages(case, "agent-a", "agent-b", []),
            parse=parse_verdict,
            want_json=True,
            reply_format=VERDICT_FORMAT,
        )
    ]


def _rewrite_requests():
    from mtrbench.data.model import ConversationalQuery, Message
    from mtrbench.generation.model_history import history_requests

    query = ConversationalQuery(
        qid="c1_2",
        conversation_id="c1",
        turn_id=2,
        query="When was it finished?",
        history=[Message("user", "Who built the tower?"), Message("assistant", "Eiffel.")],
    )
    return history_requests("rewrite", [query])


def _synthesize_requests():
    from mtrbench.synthesize import prompts

    messages = [
        {"role": "system", "content": prompts.QUESTIONER_SYSTEM},
        {"role": "user", "content": prompts.questioner_user_message("start", ["The tower dates from 1889."], [])},
    ]
    return [
        ChatRequest(
            "synth-00000/t1/questioner",
            messages,
            parse=lambda text: prompts.parse_question(text, 1),
            reply_format=prompts.QUESTION_FORMAT,
        )
    ]


def _generate_requests():
    from mtrbench.generation.prompts import answer_messages
    from mtrbench.generation.runner import parse_answer

    return [
        ChatRequest(
            "q1",
            answer_messages("full", "When was it completed?", ["It was completed in 1889."], ""),
            parse=parse_answer,
        )
    ]


@pytest.mark.parametrize(
    "command, build, malformed, good, expected",
    [
        ("judge run", _judge_requests, "The answer looks fine.", "Matches the reference.\nVerdict: [[CORRECT]]", 1),
        ("audit", _audit_requests, "Both are about monuments.", "Document ID: [1]", 1),
        ("assess", _assess_requests, "yes", '{"reference": [], "reason": "It states 1889.", "response": "yes"}', True),
        (
            "eval --history rewrite:llm",
            _rewrite_requests,
            "Sure!\nHere is a rewrite.",
            "Rewrite: When was the tower finished?",
            "When was the tower finished?",
        ),
        (
            "synthesize",
            _synthesize_requests,
            "Here is a question.",
            "[Document 1] When was the tower built?",
            (1, "When was the tower built?"),
        ),
        ("generate", _generate_requests, "", "It was completed in 1889 [1].", "It was completed in 1889 [1]."),
    ],
)
def test_each_command_succeeds_on_its_first_reask(command, build, malformed, good, expected):
    with ScriptedChatServer(GoodOnlyIfChanged(lambda _body: good, malformed=malformed), show_repairs=True) as server:
        [result] = make_client(server).run(build(), show_progress=False)
        first, second = server.requests
    value = (result.value.position, result.value.text) if command == "synthesize" else result.value
    value = value.relevant if command == "assess" else value
    assert (result.ok, value, result.attempts, len(result.malformed)) == (True, expected, 2, 1), command
    assert second["messages"][:-1] == first["messages"] and second["messages"][-1]["role"] == "user"


def test_judge_run_logs_the_malformed_reply_redacted_beside_the_verdict(tmp_path):
    from mtrbench.judge.engine import LOG_NAME, JudgeItem, run_judge
    from mtrbench.judge.prompts import TurnToJudge, verdict_messages

    turn = TurnToJudge(question="When was it built?", answer="In 1889.", reference="It was completed in 1889.")
    items = [JudgeItem("g|q1", "q1", "g", "RS", "task", 1, "verdict", verdict_messages(turn))]
    script = GoodOnlyIfChanged(lambda _body: "Verdict: [CORRECT]", malformed=f"Fine by me. key={SECRET}")
    with ScriptedChatServer(script, show_repairs=True) as server:
        judge = JudgeConfig(name="j", model="m", base_url=server.base_url, api_key_env=KEY_ENV, max_retries=0)
        run = run_judge(items, judge, tmp_path, yes=True, show_progress=False)
        assert server.request_count == 2
    assert [(t.ok, t.value) for t in run.turns] == [(True, 1)]
    log_text = (tmp_path / LOG_NAME).read_text()
    [record] = [json.loads(line) for line in log_text.splitlines()]
    assert [(m["attempt"], m["text"]) for m in record["malformed"]] == [(1, "Fine by me. key=[redacted]")]
    assert SECRET not in log_text
