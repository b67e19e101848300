"""The append-only assessment log (JSONL) and the per-pair state it implies on restart.

One record per finished step of a pair, written and flushed the moment the step ends, so a killed
run loses at most the pairs in flight. Record kinds: ``prefilter`` (kept | discarded | failed),
``debate`` (consensus | disagreement | failed), ``adjudication`` (ok | failed) and ``human``. The
latest record of a kind wins, so a failed step is simply retried and appended again.

A run holds ``assessments.jsonl.lock`` (``hold``) from reading the log to writing its outputs, so a second
run on the same folder stops at once instead of debating, and paying for, the same pairs again.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from mtrbench.infra.errors import DataError
from mtrbench.infra.locking import LockHolder, held_lock, lock_path_for

KINDS = ("prefilter", "debate", "adjudication", "human")


def debate_settings(agents: dict[str, Any], max_rounds: int) -> dict[str, Any]:
    """What a logged debate depends on besides the pair: ``agents`` maps each agent (A, B) to its judge.
    A debate logged under other settings is held again."""
    return {
        "max_rounds": max_rounds,
        "agents": {name: judge.name for name, judge in agents.items()},
        "agent_models": {name: judge.model for name, judge in agents.items()},
    }


@dataclass
class PairRecords:
    qid: str
    doc_id: str
    prefilter: dict[str, Any] | None = None
    debate: dict[str, Any] | None = None
    adjudication: dict[str, Any] | None = None
    human: dict[str, Any] | None = None

    @property
    def discarded(self) -> bool:
        return self.prefilter is not None and self.prefilter["status"] == "discarded" and self.debate is None

    @property
    def escalated(self) -> bool:
        return self.debate is not None and self.debate["status"] == "disagreement"

    def final_label(self) -> tuple[bool | None, str | None]:
        """(relevant, source); source is human | adjudicator | consensus | prefilter, or None while open."""
        if self.human is not None:
            return self.human["label"], "human"
        if self.escalated and self.adjudication is not None and self.adjudication["status"] == "ok":
            return self.adjudication["label"], "adjudicator"
        if self.debate is not None and self.debate["status"] == "consensus":
            return self.debate["label"], "consensus"
        if self.discarded:
            return False, "prefilter"
        return None, None

    def needs_prefilter(self, prefilter: bool) -> bool:
        if not prefilter or self.human is not None or self.debate is not None:
            return False
        return self.prefilter is None or self.prefilter["status"] == "failed"

    def needs_debate(self, settings: dict[str, Any] | None = None) -> bool:
        """No usable debate yet: none, a failed one, or (given this run's ``debate_settings``) one held with
        other agents or another round limit. Rounds both settings share replay from the LLM cache."""
        if self.human is not None or self.discarded:
            return False
        return (
            self.debate is None
            or self.debate["status"] == "failed"
            or (settings is not None and self.debate_is_stale(settings))
        )

    def debate_is_stale(self, settings: dict[str, Any]) -> bool:
        if self.debate is None:
            return False
        return any(key in self.debate and self.debate[key] != value for key, value in settings.items())

    def needs_adjudication(self, adjudicator: str | None) -> bool:
        """``adjudicator``: this run's adjudicator's name (None: no adjudicator); another judge's verdict is redone."""
        if adjudicator is None or self.human is not None:
            return False
        return self.escalated and (
            self.adjudication is None
            or self.adjudication["status"] == "failed"
            or self.adjudication.get("judge", adjudicator) != adjudicator
        )


def _record(line: str) -> dict[str, Any] | None:
    """A log record, or None when the line is not one."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(record, dict) or record.get("kind") not in KINDS or "qid" not in record or "doc_id" not in record:
        return None
    record["qid"], record["doc_id"] = str(record["qid"]), str(record["doc_id"])
    return record


class AssessmentLog:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.warnings: Counter = Counter()
        self._handle: TextIO | None = None

    @property
    def lock_path(self) -> Path:
        return lock_path_for(self.path)

    def hold(self) -> AbstractContextManager[LockHolder]:
        """This run's exclusive use of the log (``with log.hold(): ...``); another holder stops it with an error."""
        return held_lock(self.lock_path, purpose=f"assessment log {self.path}")

    def read(self) -> dict[tuple[str, str], PairRecords]:
        pairs: dict[tuple[str, str], PairRecords] = {}
        if not self.path.is_file():
            return pairs
        with self.path.open(encoding="utf-8") as handle:
            for n, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                record = _record(line)
                if record is None:
                    if not line.endswith("\n"):  # the last line, cut short by a kill: that step is redone
                        self.warnings["log: incomplete last line ignored"] += 1
                        continue
                    raise DataError(f"{self.path}:{n}: not an assessment log record")
                entry = pairs.setdefault(
                    (record["qid"], record["doc_id"]), PairRecords(record["qid"], record["doc_id"])
                )
                setattr(entry, record["kind"], record)
                if record["kind"] == "debate":  # an adjudication settles the debate logged before it, not this one
                    entry.adjudication = None
        return pairs

    def append(self, record: dict[str, Any]) -> None:
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._repair_last_line()
            self._handle = self.path.open("a", encoding="utf-8")
        record = {
            "kind": record["kind"],
            "qid": record["qid"],
            "doc_id": record["doc_id"],
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            **record,
        }
        self._handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._handle.flush()

    def _repair_last_line(self) -> None:
        """Before appending: end a complete last record that lacks its newline, drop one a kill cut short."""
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return
        with self.path.open("rb+") as handle:
            end = handle.seek(0, 2)
            start = end
            tail = b""
            while start > 0 and b"\n" not in tail[:-1]:
                start = max(0, start - 65536)
                handle.seek(start)
                tail = handle.read(end - start)
            if tail.endswith(b"\n"):
                return
            cut = tail.rfind(b"\n") + 1
            if _record(tail[cut:].decode("utf-8", "replace")) is not None:
                handle.seek(0, 2)
                handle.write(b"\n")
            else:
                handle.truncate(start + cut)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
