"""Ask one LLM judge about a list of turns, keep every reply, and resume.

items -> skip what the log has answered (same prompt, same judge model) -> cost estimate (or a dry run) ->
ask, appending each reply to ``judgments.jsonl`` as it arrives -> the latest record per item. A reply that
cannot be read is asked again (the client's re-asks, each a changed request) and then recorded as a failure:
counted, listed, never scored; every malformed reply's (redacted) text is in its record's ``malformed``. The log
holds reply texts and values only: no request headers, no key.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtrbench.formats.lines import read_log_records
from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.infra.locking import held_lock, lock_path_for
from mtrbench.judge.prompts import RATING_FORMAT, VERDICT_FORMAT, parse_rating, parse_verdict, prompt_hash
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig

if TYPE_CHECKING:
    from mtrbench.llm.client import ChatResult

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


def _parser(mode: str):
    return parse_rating if mode == "rating" else parse_verdict


def _requests(items: Sequence[JudgeItem]) -> list:
    from mtrbench.llm.client import ChatRequest

    return [
        ChatRequest(
            key=i.key,
            messages=i.messages,
            parse=_parser(i.mode),
            reply_format=RATING_FORMAT if i.mode == "rating" else VERDICT_FORMAT,
        )
        for i in items
    ]


def _latest(records: list[dict[str, Any]], items: Sequence[JudgeItem], judge: JudgeConfig) -> dict[str, dict]:
    """Per item key: its ok record if any, else its latest failure (same prompt and judge model only)."""
    wanted = {i.key: (i.prompt_hash, i.mode) for i in items}
    out: dict[str, dict] = {}
    for record in records:
        key = record.get("key")
        if wanted.get(key) != (record.get("prompt_hash"), record.get("mode")) or record.get("model") != judge.model:
            continue
        if key not in out or not out[key].get("ok"):
            out[key] = record
    return out


def _record(item: JudgeItem, judge: JudgeConfig, result: ChatResult) -> dict[str, Any]:
    return {
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **item.describe(),
        "judge": judge.name,
        "model": judge.model,
        "ok": bool(result.ok),
        "value": result.value if result.ok else None,
        "error": result.error,
        "reply": result.text,
        "attempts": result.attempts,
        "cached": result.cached,
        "malformed": [m.as_dict() for m in result.malformed],
    }


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
    from mtrbench.llm.cost import confirm_cost, estimate_cost, print_dry_run
    from mtrbench.llm.hf import make_client

    if not items:
        raise UserInputError("nothing to judge")
    modes = {i.mode for i in items}
    if len(modes) != 1 or not modes <= set(MODES):
        raise UserInputError(f"one judging mode per run ({', '.join(MODES)}), got {sorted(modes)}")
    if len({i.key for i in items}) != len(items):
        raise DataError("two judge items share a key")
    log_path = Path(output_dir) / LOG_NAME
    records, bad = read_log_records(log_path)
    latest = _latest(records, items, judge)
    pending = [i for i in items if not latest.get(i.key, {}).get("ok")]
    if dry_run:
        print_dry_run(_requests(pending), [judge])
        print(f"{len(items) - len(pending)} of {len(items)} turns already answered in {log_path}")
        return None
    client = make_client(judge, cache)  # hf:// in-process; a missing key stops here, before the cost question
    if pending:
        confirm_cost([(judge, estimate_cost(_requests(pending), judge, cache))], yes)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    by_key = {i.key: i for i in pending}
    with held_lock(lock_path_for(log_path), purpose=f"judge log {log_path}"):
        cut_short = log_path.is_file() and log_path.stat().st_size > 0 and not log_path.read_bytes().endswith(b"\n")
        with log_path.open("a", encoding="utf-8") as handle:
            if cut_short:  # a kill mid-write left half a line: start ours on a fresh one
                handle.write("\n")

            def on_result(result) -> None:
                record = _record(by_key[result.key], judge, result)
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                handle.flush()  # a killed run keeps every reply already received
                latest[result.key] = record

            if pending:
                client.run(
                    _requests(pending), desc=f"judge {judge.name}", show_progress=show_progress, on_result=on_result
                )
    u = client.usage
    usage = {
        "requests": u.requests,
        "cached": u.cached,
        "failures": u.failures,
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "cost_usd": u.cost_usd(judge),
    }
    turns = []
    for item in items:
        record = latest.get(item.key, {})
        ok = bool(record.get("ok"))
        turns.append(
            JudgedTurn(
                item=item,
                ok=ok,
                value=record.get("value") if ok else None,
                error=None if ok else record.get("error", "not answered"),
                reply=record.get("reply"),
            )
        )
    return JudgeRun(
        judge=judge,
        mode=items[0].mode,
        turns=turns,
        sent=len(pending),
        usage=usage,
        log_path=log_path,
        unreadable_log_lines=bad,
    )
