"""The append-only assessment log (JSONL, the LLM stage runner's record layout) and the per-pair state it implies.

One record per finished step of a pair, written and flushed the moment the step ends, so a killed
run loses at most the pairs in flight. Each step is a stage of ``mtrbench.llm.stage`` (its name is the
record's ``stage`` and ``kind``): ``prefilter`` (kept | discarded | failed), ``debate`` (consensus |
disagreement | failed), ``adjudication`` (ok | failed), and ``human`` for labels merged from people. A
record's key is ``qid | doc_id | kind``; its settings are what it may be reused under (a debate: the
agents and --rounds; an adjudication: the adjudicator and the debate it settles). The latest record of a
kind wins, so a failed step is simply retried and appended again, and a debate drops the adjudication
logged before it. Logs written before the runner's layout are read (``OlderAssessRecords``).

A run holds ``assessments.jsonl.lock`` (``hold``) from reading the log to writing its outputs, so a second
run on the same folder stops at once instead of debating, and paying for, the same pairs again.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mtrbench.formats.lines import read_numbered_log_records
from mtrbench.infra.errors import DataError
from mtrbench.llm.stage import JSONValue, LogWriter, Setting, StageLog, StageRecord, now

PREFILTER, DEBATE, ADJUDICATION, HUMAN = "prefilter", "debate", "adjudication", "human"
KINDS = (PREFILTER, DEBATE, ADJUDICATION, HUMAN)
UNREADABLE = "log: incomplete last line ignored"


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


def step_key(qid: str, doc_id: str, kind: str) -> str:
    """A step's key in the log: the pair and the step."""
    return f"{qid} | {doc_id} | {kind}"


def debate_identity(settings: dict[str, Any]) -> dict[str, Setting]:
    """``debate_settings`` as the runner's flat settings (agents by name and model, --rounds)."""
    agents, models = settings.get("agents") or {}, settings.get("agent_models") or {}
    return {
        "max_rounds": settings.get("max_rounds"),
        "agent_a": agents.get("Agent A"),
        "agent_b": agents.get("Agent B"),
        "agent_a_model": models.get("Agent A"),
        "agent_b_model": models.get("Agent B"),
    }


def debate_id(debate: dict[str, Any] | None) -> str | None:
    """What an adjudication settles: the debate's settings and rounds, hashed (None without a debate)."""
    if debate is None:
        return None
    content = {"settings": debate_identity(debate), "rounds": debate.get("rounds")}
    text = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def step_ok(kind: str, record: dict[str, Any]) -> bool:
    return kind == HUMAN or record.get("status") not in ("failed", None)


class OlderAssessRecords:
    """Reads a record of the layout assess wrote before the stage runner (``kind``, ``qid``, ``doc_id`` and the
    step's fields; no key, settings or ok): the record in the runner's layout, or None when the line is no
    assessment record. Lines come in file order, so it keeps each pair's last debate: an old adjudication settles
    the debate logged before it."""

    def __init__(self) -> None:
        self.debates: dict[tuple[str, str], dict[str, Any]] = {}

    def __call__(self, raw: Mapping[str, JSONValue]) -> StageRecord | None:
        upgraded = self.upgrade(raw)
        return None if upgraded is None else StageRecord.from_json(upgraded)

    def upgrade(self, raw: Mapping[str, JSONValue]) -> dict[str, JSONValue] | None:
        kind, qid, doc_id = raw.get("kind"), raw.get("qid"), raw.get("doc_id")
        if kind not in KINDS or qid is None or doc_id is None:
            return None
        record: dict[str, Any] = {**raw, "qid": str(qid), "doc_id": str(doc_id)}
        pair = (record["qid"], record["doc_id"])
        settings: dict[str, Setting] = {}
        if kind == DEBATE:
            settings = debate_identity(record)
            self.debates[pair] = record
        elif kind == ADJUDICATION:
            settings = {"judge": record.get("judge"), "debate": debate_id(self.debates.get(pair))}
        return {
            **record,
            "stage": str(kind),
            "key": step_key(record["qid"], record["doc_id"], str(kind)),
            "judge": record.get("judge") or "",
            "settings": settings,
            "ok": step_ok(str(kind), record),
            "value": record.get("label"),
        }


class AssessmentLog:
    """The assessment's ``StageLog`` (``stage_log``, which the stage runner appends to) and the pairs it holds."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.stage_log = StageLog(self.path, purpose="assessment log", legacy=OlderAssessRecords())
        self.warnings: Counter = Counter()
        self._open: ExitStack | None = None
        self._writer: LogWriter | None = None
        self._older = OlderAssessRecords()  # for the records written by hand (append)

    def hold(self) -> AbstractContextManager[None]:
        """This run's exclusive use of the log (``with log.hold(): ...``); another holder stops it with an error."""
        return self.stage_log.hold()

    def records(self) -> Iterator[StageRecord]:
        """The log's records in file order (lines cut short by a kill counted in ``warnings``); a line that is
        no assessment record stops the run with its place."""
        numbered, unreadable = read_numbered_log_records(self.path)
        if unreadable:
            self.warnings[UNREADABLE] += unreadable
        older = OlderAssessRecords()
        for number, raw in numbered:
            record = StageRecord.from_json(raw) or older(raw)
            if (
                record is None
                or record.stage not in KINDS
                or "qid" not in record.fields
                or "doc_id" not in record.fields
            ):
                raise DataError(f"{self.path}:{number}: not an assessment log record")
            yield record

    def read(self) -> dict[tuple[str, str], PairRecords]:
        pairs: dict[tuple[str, str], PairRecords] = {}
        for record in self.records():
            fields = record.to_json()
            qid, doc_id = str(fields["qid"]), str(fields["doc_id"])
            entry = pairs.setdefault((qid, doc_id), PairRecords(qid, doc_id))
            setattr(entry, record.stage, fields)
            if record.stage == DEBATE:  # an adjudication settles the debate logged before it, not this one
                entry.adjudication = None
        return pairs

    def append(self, record: dict[str, Any]) -> None:
        """Log a step written by hand (a human label) as the runner would; the log stays open until ``close``."""
        if self._writer is None:
            self._open = ExitStack()
            self._writer = self._open.enter_context(self.stage_log.appending())
        parsed = StageRecord.from_json(record) or self._older(record)
        if parsed is None:
            raise ValueError(f"not an assessment log record: {record}")
        self._writer.append(parsed if parsed.time else replace(parsed, time=now()))

    def close(self) -> None:
        if self._open is not None:
            self._open.close()
        self._open = None
        self._writer = None
