"""How the nugget steps ask: each step is a stage of ``mtrbench.llm.stage`` in one shared log; the cost is confirmed
once, at the first step with something to ask (later steps estimated from placeholders); failures are tallied per
step for ``--max-failure-rate``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mtrbench.judge.prompts import prompt_hash
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.failure_rate import JudgeFailures, most_common
from mtrbench.llm.stage import (
    JSONValue,
    Stage,
    StageItem,
    StageLog,
    StageOptions,
    StageOutcome,
    plan_stages,
    run_stages,
)
from mtrbench.llm.types import ChatRequest

STAGE_PREFIX = "nuggets."


def step_item(
    key: str,
    messages: list[dict[str, str]],
    parse: Callable[[str], Any],
    reply_format: str,
    fields: dict[str, JSONValue],
) -> StageItem:
    request = ChatRequest(key=key, messages=messages, parse=parse, reply_format=reply_format)
    return StageItem(key, request, settings={"prompt_hash": prompt_hash(messages)}, fields=fields)


def step_stage(step: str, judge: JudgeConfig, items: Sequence[StageItem], unit: str) -> Stage:
    return Stage(
        name=STAGE_PREFIX + step,
        judge=judge,
        items=list(items),
        settings={"model": judge.model},
        desc=f"nuggets {step} {judge.name}",
        unit=unit,
        completion_tokens_per_request=120,
    )


@dataclass
class StepTally:
    """Failed and total items of one step over all its calls (creation asks in rounds)."""

    step: str
    unit: str
    failed: int = 0
    total: int = 0
    reasons: list[str] = field(default_factory=list)

    def add(self, outcome: StageOutcome) -> None:
        for item in outcome.stage.items:
            self.total += 1
            if not outcome.answered(item):
                self.failed += 1
                record = outcome.record(item)
                self.reasons.append((record.error if record is not None else None) or "not answered")

    def failures(self, judge: JudgeConfig) -> JudgeFailures:
        return JudgeFailures(judge.name, self.failed, self.total, most_common(self.reasons), "judge", self.unit)


class StepAsker:
    """Asks the steps in order through one log; ``later`` gives the placeholder stages still to come, for the one
    cost question."""

    def __init__(self, log: StageLog, options: StageOptions) -> None:
        self.log = log
        self.options = options
        self.confirmed = False
        self.dry_run_text: str | None = None
        self.tallies: dict[str, StepTally] = {}
        self.sent = 0

    def ask(self, stage: Stage, unit: str, later: Sequence[Stage] = ()) -> StageOutcome | None:
        """The stage's outcome; None after a dry run (which stops at the first step with something to ask)."""
        planned = plan_stages([stage], self.log).outcomes[0]
        if not planned.pending:
            outcome = planned
        else:
            costed = () if self.confirmed else later
            run = run_stages([stage], self.log, self.options, costed_later=costed, confirm=not self.confirmed)
            if run.dry_run is not None:
                self.dry_run_text = run.dry_run.text
                return None
            self.confirmed = True
            outcome = run.outcomes[0]
            self.sent += len(outcome.pending)
        self.tallies.setdefault(stage.name, StepTally(stage.name.removeprefix(STAGE_PREFIX), unit)).add(outcome)
        return outcome


def value_of(outcome: StageOutcome, key: str) -> JSONValue:
    """The parsed reply of an answered item; None when it failed or was never answered."""
    record = outcome.records.get(key)
    return record.value if record is not None and record.ok else None
