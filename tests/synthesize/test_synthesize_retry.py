"""A conversation synthesize dropped is tried again on a rerun, up to retry_dropped times, with other seeds.

Stage 3 (mtrbench.synthesize.generate.run_generate) on two hand-made clusters, against a scripted server on
127.0.0.1 whose questioner garbles every question on the "beta" cluster while ``garble`` is set.
"""

from __future__ import annotations

import json
import threading

from llm_server import Reply, ScriptedChatServer

from mtrbench.llm.config import JudgeConfig
from mtrbench.synthesize.curate import Chunk
from mtrbench.synthesize.generate import DROPPED_SEED_STEP, LOG, Agents, GenerateOptions, run_generate
from mtrbench.synthesize.plan import PlanOptions

CHUNKS = [
    Chunk(f"{name}-{i}", f"doc-{name}", name, f"The {name} river, section {i}, flows north for {10 * i} km.")
    for name in ("alpha", "beta")
    for i in range(1, 4)
]
CLUSTERS = [[c.chunk_id for c in CHUNKS if c.title == name] for name in ("alpha", "beta")]


class Agents3:
    """Questioner, responder and polisher of a scripted server."""

    def __init__(self) -> None:
        self.garble = True
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> Reply:
        system, last = body["messages"][0]["content"], body["messages"][-1]["content"]
        if system.startswith("You play the user"):
            with self.lock:
                if self.garble and "The beta river" in last:
                    return Reply("Sure! Here is a question about the river.")
            return Reply("[Document 1] How far does the river in section 1 flow?")
        if system.startswith("You are the assistant"):
            return Reply("The river in section 1 flows north for ten kilometres, as the document says.")
        return Reply("Rewritten: and how far does it flow?")


def _agents(server: ScriptedChatServer) -> Agents:
    def judge(name: str) -> JudgeConfig:
        return JudgeConfig(
            name=name,
            model=f"{name}-model",
            base_url=server.base_url,
            api_key_env="MTRBENCH_NO_KEY",
            temperature=0.7,
            max_retries=0,
            parse_retries=1,
            concurrency=1,
        )

    return Agents(judge("questioner"), judge("responder"), judge("polisher"))


def _run(server: ScriptedChatServer, folder, retry_dropped: int):
    options = GenerateOptions(plan=PlanOptions(conversations=2, turns=1, hard_switches=0), retry_dropped=retry_dropped)
    return run_generate(CHUNKS, CLUSTERS, folder, _agents(server), options, upstream="hand-made", show_progress=False)


def test_a_dropped_conversation_is_retried_on_the_rerun_and_finishes(tmp_path, capsys):
    script = Agents3()
    with ScriptedChatServer(script) as server:
        first = _run(server, tmp_path, retry_dropped=2)
        assert (first.finished, dict(first.dropped), first.retried) == (1, {"malformed reply": 1}, 0)
        # alpha: 3 agents; beta: the questioner asked, then re-asked once (parse_retries 1), then dropped
        assert server.request_count == 3 + 2
        [dropped] = [
            json.loads(line)
            for line in (tmp_path / LOG).read_text().splitlines()
            if json.loads(line)["status"] == "dropped"
        ]
        assert [m["text"] for m in dropped["malformed"]] == ["Sure! Here is a question about the river."] * 2
        assert [m["agent"] for m in dropped["malformed"]] == ["questioner"] * 2
        script.garble = False
        sent_before = server.request_count
        second = _run(server, tmp_path, retry_dropped=2)
        rerun = server.requests[sent_before:]
    assert (second.finished, dict(second.dropped), second.retried, second.given_up) == (2, {}, 1, 0)
    assert len(rerun) == 3  # only the dropped conversation, one request per agent
    assert {body["seed"] for body in rerun} == {DROPPED_SEED_STEP}  # moved from the first try's (none sent)
    assert "dropped on an earlier run: 1 tried again, 0 given up" in capsys.readouterr().out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["finished"] == 2 and summary["retried_last_run"] == 1


def test_retries_stop_at_the_limit_and_the_rest_is_counted_as_given_up(tmp_path, capsys):
    with ScriptedChatServer(Agents3()) as server:
        _run(server, tmp_path, retry_dropped=1)
        counts = [server.request_count]
        retried = _run(server, tmp_path, retry_dropped=1)  # the one retry: garbled again
        counts.append(server.request_count)
        last = _run(server, tmp_path, retry_dropped=1)  # past the limit: nothing is asked
        counts.append(server.request_count)
    assert counts == [5, 7, 7]
    assert (retried.retried, retried.given_up, dict(retried.dropped)) == (1, 0, {"malformed reply": 1})
    assert (last.retried, last.given_up, last.finished) == (0, 1, 1)
    assert "0 tried again, 1 given up after 2 tries" in capsys.readouterr().out
    tries = [json.loads(line)["try"] for line in (tmp_path / LOG).read_text().splitlines()]
    assert sorted(tries) == [1, 1, 2]  # alpha once; beta twice
