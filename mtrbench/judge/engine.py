"""Ask one LLM judge about a list of turns, keep every reply, and resume.

items -> one stage of ``mtrbench.llm.stage``: skip what the log has answered (same prompt, mode and judge model)
-> cost estimate (or a dry run) -> ask, appending each reply to ``judgments.jsonl`` as it arrives (the stage
record layout) -> the latest record per item. A reply that
cannot be read is asked again (the client's re-asks, each a changed request) and then recorded as a failure:
counted, listed, never scored; every malformed reply's (redacted) text is in its record's ``malformed``. The log
holds reply texts and values only: no request headers, no key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.infra.numeric import Scale, on_scale
from mtrbench.judge.prompts import (
    RATING_FORMAT,
    RATING_HIGH,
    RATING_LOW,
    VERDICT_FORMAT,
    parse_rating,
    parse_verdict,
    prompt_hash,
)
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.stage import Stage, StageItem, StageLog, StageOptions, StageRecord, run_stage
from mtrbench.llm.types import ChatRequest

MODES = ("rating", "verdict")
LOG_NAME = "judgments.jsonl"


@dataclass(frozen=True)
class JudgeItem:
    key: str  # unique within a run: "<generator>|<qid>"
    qid: str  # the task's query id, or "<question_id>#<turn>" for RAD-Bench
    generator: str  # the model whose answer is judged
    scenario: str  # prompt family: RS, RR, TR
    category: str  # table column: RAD-Bench category, or the task name
    turn: int
    mode: str  # rating | verdict
    messages: list[dict[str, str]] = field(compare=False)

    @property
    def prompt_hash(self) -> str:
        return prompt_hash(self.messages)

    def describe(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "qid": self.qid,
            "generator": self.generator,
            "scenario": self.scenario,
            "category": self.category,
            "turn": self.turn,
            "mode": self.mode,
            "prompt_hash": self.prompt_hash,
        }


@dataclass(frozen=True)
class JudgedTurn:
    item: JudgeItem
    ok: bool
    value: float | None  # rating 1-10, or verdict 1/0; None for a failure
    error: str | None
    reply: str | None


@dataclass
class JudgeRun:
    judge: JudgeConfig
    mode: str
    turns: list[JudgedTurn]  # one per item, in item order
    sent: int  # items asked in this run (the rest came from the log)
    usage: dict[str, Any]
    log_path: Path
    unreadable_log_lines: int = 0

    @property
    def failures(self) -> list[JudgedTurn]:
        return [t for t in self.turns if not t.ok]

    @property
    def answered(self) -> list[JudgedTurn]:
        return [t for t in self.turns if t.ok]


def _request(item: JudgeItem) -> ChatRequest:
    rating = item.mode == "rating"
    return ChatRequest(
        key=item.key,
        messages=item.messages,
        parse=parse_rating if rating else parse_verdict,
        reply_format=RATING_FORMAT if rating else VERDICT_FORMAT,
    )


def _requests(items: Sequence[JudgeItem]) -> list[ChatRequest]:
    return [_request(item) for item in items]


def judge_stage(items: Sequence[JudgeItem], judge: JudgeConfig) -> Stage:
    """The items as one stage: a logged reply is reused under the same judge model, mode and prompt (the names
    the judge engine's earlier log layout used, so its logs resume too)."""
    return Stage(
        name="judge",
        judge=judge,
        items=[
            StageItem(
                item.key,
                request,
                settings={"prompt_hash": item.prompt_hash},
                fields={k: v for k, v in item.describe().items() if k not in ("key", "mode", "prompt_hash")},
            )
            for item, request in zip(items, _requests(items))
        ],
        settings={"model": judge.model, "mode": items[0].mode},
        desc=f"judge {judge.name}",
        unit="turns",
    )


# What this judge writes to its log (a failure is listed, never scored -1), checked again when read back.
LOGGED_SCALES = {
    "rating": Scale(f"a rating from {RATING_LOW} to {RATING_HIGH}", low=RATING_LOW, high=RATING_HIGH),
    "verdict": Scale("0 (incorrect) or 1 (correct)", also=(0, 1)),
}


def _judged(item: JudgeItem, record: StageRecord | None, log_path: Path) -> JudgedTurn:
    if record is None:
        return JudgedTurn(item, ok=False, value=None, error="not answered", reply=None)
    value = record.value if record.ok and isinstance(record.value, (int, float)) else None
    if value is not None:  # a logged value is read back from a file: on its scale, as a reply's is when parsed
        on_scale(value, f"{log_path}: {item.key}", item.mode, LOGGED_SCALES[item.mode])  # the value keeps its type
    return JudgedTurn(item, ok=record.ok, value=value, error=None if record.ok else record.error, reply=record.reply)


def run_judge(
    items: Sequence[JudgeItem],
    judge: JudgeConfig,
    output_dir: Path,
    *,
    cache: ResponseCache | None = None,
    dry_run: bool = False,
    yes: bool = False,
    show_progress: bool = True,
) -> JudgeRun | None:
    """Ask ``judge`` about every item the log in ``output_dir`` has not answered; None after a dry run."""
    if not items:
        raise UserInputError("nothing to judge")
    modes = {i.mode for i in items}
    if len(modes) != 1 or not modes <= set(MODES):
        raise UserInputError(f"one judging mode per run ({', '.join(MODES)}), got {sorted(modes)}")
    if len({i.key for i in items}) != len(items):
        raise DataError("two judge items share a key")
    log = StageLog(Path(output_dir) / LOG_NAME, purpose="judge log")
    options = StageOptions(cache=cache, dry_run=dry_run, yes=yes, show_progress=show_progress)
    outcome, run = run_stage(judge_stage(items, judge), log, options)
    if run.dry_run is not None:
        return None
    return JudgeRun(
        judge=judge,
        mode=items[0].mode,
        turns=[_judged(item, outcome.records.get(item.key), log.path) for item in items],
        sent=len(outcome.pending),
        usage=outcome.usage_summary(),
        log_path=log.path,
        unreadable_log_lines=run.unreadable_log_lines,
    )
