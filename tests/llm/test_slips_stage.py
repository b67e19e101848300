"""The stage runner's failure count: items a spending cap left unasked count as failed ("not answered") for
--max-failure-rate, as failed replies do; counts worked out by hand."""

from __future__ import annotations

import asyncio

import pytest

from mtrbench.infra.errors import TooManyFailures
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.stage import Stage, StageItem, StageLog, StageOptions, arun_stages
from mtrbench.llm.types import ChatRequest, ChatResult

KEYS = ["a", "b", "c", "d"]


def _stage() -> Stage:
    items = [StageItem(k, ChatRequest(k, [{"role": "user", "content": k}])) for k in KEYS]
    return Stage("capped", JudgeConfig(name="j", model="m"), items)


async def _answer(stage: Stage, item: StageItem) -> ChatResult:
    return ChatResult(item.key, True, "ok", "ok", None, 1, False, 3, 1)


def _run(max_failure_rate: float | None, tmp_path, allowed: int = 1):
    """Ask with a cap that lets ``allowed`` items start, one at a time."""
    started = []

    def under_cap() -> bool:
        started.append(1)
        return len(started) <= allowed

    options = StageOptions(show_progress=False, max_failure_rate=max_failure_rate)
    log = StageLog(tmp_path / "capped.jsonl")
    return asyncio.run(
        arun_stages([_stage()], log, options, _answer, concurrency=1, confirm=False, keep_asking=under_cap)
    )


def test_items_a_cap_left_unasked_count_as_failed(tmp_path):
    run = _run(None, tmp_path)
    assert run.stopped
    [failures] = run.failures()
    assert (failures.failed, failures.total) == (3, 4)  # one answered, three never asked
    assert failures.reason == "not answered (3)"


def test_max_failure_rate_stops_on_unanswered_items(tmp_path):
    with pytest.raises(TooManyFailures, match="failed on 3 of 4 items"):
        _run(0.5, tmp_path)
    # three of four answered: 25% unanswered is within 0.5
    assert _run(0.5, tmp_path / "again", allowed=3).failures()[0].failed == 1
