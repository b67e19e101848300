"""A --max-cost stop leaves conversations unstarted: they count as failures for --max-failure-rate (the stage
runner counts an item it never asked the same way), so a stop after 1 of 2 conversations is 50 % failed, not 0 %."""

from __future__ import annotations

from llm_server import ScriptedChatServer
from test_synthesize_log import agent_replies, generate

from mtrbench.llm.failure_rate import over_limit


def test_conversations_a_cost_stop_left_unstarted_count_as_failed(tmp_path):
    with ScriptedChatServer(agent_replies) as server:
        report = generate(server, tmp_path, max_cost_usd=0.002)  # spent after the first of 2 (see test_synthesize_log)
    assert report.stopped_by_cost and (report.finished, report.planned) == (1, 2)
    failures = report.failures
    assert failures is not None
    assert (failures.failed, failures.total) == (1, 2)
    assert failures.reason is not None and "not answered" in failures.reason
    assert over_limit([failures], 0.25) == [failures]
