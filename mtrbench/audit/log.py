"""The audit's append-only JSONL log: one record per judge reply, written as each reply arrives.

It is the audit's memory. A restarted run skips every (dimension, instance, judge) the log has answered
successfully with the same prompt and model, even without the LLM cache; failures are asked again.
A line cut short by a kill is ignored (and counted) when read back.

A run holds ``log.jsonl.lock`` (``hold``) from reading the log to writing its results, so a second run on
the same folder stops at once instead of asking, and paying for, the same items again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from mtrbench.audit.defaults import COMPLETENESS
from mtrbench.audit.plan import AuditItem
from mtrbench.formats.lines import read_log_records
from mtrbench.infra.locking import LockHolder, held_lock, lock_path_for
from mtrbench.llm.failure_rate import JudgeFailures, most_common

if TYPE_CHECKING:
    from mtrbench.llm.client import ChatResult
    from mtrbench.llm.config import JudgeConfig

LOG_NAME = "log.jsonl"

ItemKey = tuple[str, str, str]  # (dimension, instance_id, judge)


def make_record(item: AuditItem, judge: str, model: str, result: ChatResult) -> dict[str, Any]:
    """A log record from a ``ChatResult`` (the reply text is kept raw; no request headers, no key)."""
    record: dict[str, Any] = {
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **item.describe(),
        "judge": judge,
        "model": model,
        "ok": bool(result.ok),
        "reply": result.text,
        "parsed": result.value if result.ok else None,
        "score": None,
        "error": result.error,
        "attempts": result.attempts,
        "cached": result.cached,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "malformed": [m.as_dict() for m in result.malformed],
    }
    if result.ok:
        if item.dimension == COMPLETENESS:
            picked = int(result.value)
            record["picked_position"] = picked
            record["picked_doc"] = item.doc_ids[picked - 1]
            record["on_gold"] = record["picked_doc"] == item.gold_doc
            record["score"] = 1.0 if record["on_gold"] else 0.0
        else:
            record["score"] = float(result.value)
    return record


@dataclass
class LogContents:
    records: list[dict[str, Any]]
    unreadable_lines: int

    def latest(self, items: list[AuditItem], judge: str, model: str) -> dict[ItemKey, dict[str, Any]]:
        """For each planned item: its ok record if there is one, else its latest failure.

        Records with another prompt or model (an earlier configuration) are not the same question and
        are left out.
        """
        wanted = {(i.dimension, i.instance_id): i.prompt_hash for i in items}
        out: dict[ItemKey, dict[str, Any]] = {}
        for record in self.records:
            pair = (record.get("dimension"), record.get("instance_id"))
            same_question = wanted.get(pair) == record.get("prompt_hash")
            if record.get("judge") != judge or record.get("model") != model or not same_question:
                continue
            key = (pair[0], pair[1], judge)
            previous = out.get(key)
            if previous is None or not previous.get("ok"):
                out[key] = record
        return out


class AuditLog:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._handle: TextIO | None = None

    @property
    def lock_path(self) -> Path:
        return lock_path_for(self.path)

    def hold(self) -> AbstractContextManager[LockHolder]:
        """This run's exclusive use of the log (``with log.hold(): ...``); another holder stops it with an error."""
        return held_lock(self.lock_path, purpose=f"audit log {self.path}")

    def read(self) -> LogContents:
        records, bad = read_log_records(self.path)
        return LogContents(records, bad)

    def __enter__(self) -> AuditLog:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        cut_short = self.path.is_file() and self.path.stat().st_size > 0 and not self._ends_with_newline()
        self._handle = self.path.open("a", encoding="utf-8")
        if cut_short:  # a kill mid-write left half a line: start ours on a fresh one
            self._handle.write("\n")
        return self

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as handle:
            handle.seek(-1, 2)
            return handle.read(1) == b"\n"

    def append(self, record: dict[str, Any]) -> None:
        assert self._handle is not None, "use AuditLog as a context manager to append"
        self._handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._handle.flush()  # the OS has it now: a killed process loses nothing already answered

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def judge_failures(output_dir: Path, items: Sequence[AuditItem], judges: Sequence[JudgeConfig]) -> list[JudgeFailures]:
    """Per judge: the planned items whose latest reply in the log failed, of those it has any reply for, with the
    most common reason (``failure_rate.JudgeFailures``, for ``--max-failure-rate``)."""
    contents = AuditLog(Path(output_dir) / LOG_NAME).read()
    counts = []
    for judge in judges:
        latest = contents.latest(list(items), judge.name, judge.model)
        reasons = [r.get("error") for r in latest.values() if not r.get("ok")]
        counts.append(JudgeFailures(judge.name, len(reasons), len(latest), most_common(reasons)))
    return counts
