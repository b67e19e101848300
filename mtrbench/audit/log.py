"""The audit as stages of the LLM stage runner (``mtrbench.llm.stage``): one stage per judge over the planned items,
one shared append-only log (``log.jsonl``) in the runner's record layout.

A record is the runner's (stage ``audit``, key ``dimension|instance_id``, judge, settings, ok, value, error, reply,
attempts, tokens, malformed) with the instance (``instances.jsonl``'s fields), the model and the score between
settings and ok; completeness records add the pick (position, document, whether it is the gold one). A restarted
run skips every item the log has answered successfully under the same judge, model and prompt, even without the LLM
cache; failures are asked again. Logs written before the runner's layout are read as such.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from mtrbench.audit.defaults import COMPLETENESS
from mtrbench.audit.plan import AuditItem
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.stage import JSONValue, ReplyFields, Stage, StageItem, StageLog, StageRecord, legacy_record
from mtrbench.llm.types import ChatRequest, ChatResult

LOG_NAME = "log.jsonl"
STAGE = "audit"

ItemKey = tuple[str, str, str]  # (dimension, instance_id, judge)


def audit_log(path: str | Path) -> StageLog:
    """The audit's log at ``path``; its lock stops a second audit on the same folder."""
    return StageLog(path, purpose="audit log", legacy=older_audit_record)


def request(item: AuditItem) -> ChatRequest:
    return ChatRequest(key=item.key, messages=item.messages, parse=item.parser(), reply_format=item.reply_format)


def audit_requests(items: Sequence[AuditItem]) -> list[ChatRequest]:
    return [request(item) for item in items]


def judge_stage(judge: JudgeConfig, items: Sequence[AuditItem]) -> Stage:
    """One judge's part of the audit: every planned item, reused under the same judge, model and prompt."""
    return Stage(
        STAGE,
        judge,
        [
            StageItem(
                item.key, request(item), {"prompt_hash": item.prompt_hash}, {**item.describe(), "model": judge.model}
            )
            for item in items
        ],
        settings={"judge": judge.name, "model": judge.model},
        desc=judge.name,
        reply_fields=Scores({item.key: item for item in items}),
    )


class Scores(ReplyFields):
    """A reply's score: the rating, or for completeness 1.0 when the pick is the gold document (with the pick)."""

    def __init__(self, items: dict[str, AuditItem]) -> None:
        self.items = items

    def __call__(self, item: StageItem, result: ChatResult) -> dict[str, JSONValue]:
        if not result.ok:
            return {"score": None}
        audited = self.items[item.key]
        if audited.dimension != COMPLETENESS:
            return {"score": float(result.value)}
        picked = int(result.value)
        doc = audited.doc_ids[picked - 1]
        on_gold = doc == audited.gold_doc
        return {"score": 1.0 if on_gold else 0.0, "picked_position": picked, "picked_doc": doc, "on_gold": on_gold}


def older_audit_record(raw: Mapping[str, JSONValue]) -> StageRecord | None:
    """A record written before the runner's layout (the instance, judge, model, ``parsed`` for the value; no key or
    settings) in the runner's layout; None for a line that is no such record."""
    if "dimension" not in raw or "instance_id" not in raw:
        return legacy_record(raw)
    record = {k: v for k, v in raw.items() if k != "parsed"}
    settings: dict[str, JSONValue] = {
        "judge": raw.get("judge"),
        "model": raw.get("model"),
        "prompt_hash": raw.get("prompt_hash"),
    }
    key = f"{raw['dimension']}|{raw['instance_id']}"
    return StageRecord.from_json(
        {**record, "stage": STAGE, "key": key, "settings": settings, "value": raw.get("parsed")}
    )
