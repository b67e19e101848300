"""The one LLM stage runner: every LLM path declares a stage, and this module runs it.

A stage is a small declared thing (:class:`Stage`): its items, each with the request to send (:class:`StageItem`),
the settings that must match for a logged reply to be reused (model, prompt hash, mode, ...) and the fields its
records carry. :func:`run_stages` owns everything else:

* the append-only JSONL log (:class:`StageLog`), held under its lock while asking; a line cut short by a kill is
  ignored and counted, and the next line starts on a fresh one;
* resume: an item is asked only when the log has no ok record for it under the same settings (a failure, a
  missing item or a changed setting is asked again);
* the dry run (a :class:`DryRunReport`, also reported to the person running the command), the cost estimate and
  its confirmation (``--yes``), the client's progress bar;
* failure counting and the ``--max-failure-rate`` exit naming the most common reason;
* redaction: records hold reply and error texts the client already redacted, and every line written loses the
  judge's exact secrets once more.

Every stage writes the same record layout (:class:`StageRecord`, documented in docs/llm-judges.md); logs written
before it (the judge engine's and MTRAG's) are read too (:meth:`StageRecord.from_json`).

Multi-request or async items (a debate of several rounds) ask through their own coroutine and hand back one
``ChatResult`` per item (:func:`combined_result`); :func:`arun_stages` gives them the same log, resume, cost and
failure accounting.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from mtrbench.formats.lines import read_numbered_log_records
from mtrbench.infra.atomic import LineAppender, check_file_target
from mtrbench.infra.errors import DataError
from mtrbench.infra.locking import held_lock, lock_path_for
from mtrbench.infra.numeric import json_text
from mtrbench.infra.reporting import progress_bar, report
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.cost import CostEstimate, confirm_cost, dry_run_text, estimate_cost
from mtrbench.llm.failure_rate import JudgeFailures, most_common, raise_if_over
from mtrbench.llm.hf import make_client
from mtrbench.llm.redact import Redactor
from mtrbench.llm.types import ChatRequest, ChatResult, ChatRunner, MalformedReply, Usage

JSONValue = None | bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"]
Setting = None | bool | int | float | str
Settings = Mapping[str, Setting]
Fields = Mapping[str, JSONValue]

# The fields every record has, in this order; a stage's own fields come between ``settings`` and ``ok``.
RECORD_FIELDS = (
    "time",
    "stage",
    "key",
    "judge",
    "settings",
    "ok",
    "value",
    "error",
    "reply",
    "attempts",
    "cached",
    "prompt_tokens",
    "completion_tokens",
    "malformed",
)


@dataclass(frozen=True)
class StageItem:
    """One thing to ask: its key (unique within its stage), its request, and what its record carries."""

    key: str
    request: ChatRequest  # what is sent (an async item: its first request, shown by the dry run and costed)
    settings: Settings = field(default_factory=dict)  # this item's part of the identity, e.g. its prompt hash
    fields: Fields = field(default_factory=dict)  # stage-specific record fields known before asking (qid, ...)

    def __post_init__(self) -> None:
        if self.request.key != self.key:  # results come back under the request's key
            raise ValueError(f"stage item '{self.key}' has a request keyed '{self.request.key}'")


class ReplyFields:
    """Stage-specific record fields computed from a result (e.g. the audit's picked document); none by default."""

    def __call__(self, item: StageItem, result: ChatResult) -> dict[str, JSONValue]:
        return {}


@dataclass(frozen=True)
class Stage:
    """A stage as declared by its path: the items one judge answers, under shared settings.

    ``settings`` plus each item's own are the identity a logged reply must match to be reused (model, mode, prompt
    hash, ...). Several stages may share one log (one per judge, or per step): their records are told apart by
    ``name`` and by key.
    """

    name: str  # written in each record as "stage": judge, mtrag, audit, generate, ...
    judge: JudgeConfig
    items: Sequence[StageItem]
    settings: Settings = field(default_factory=dict)
    desc: str = ""  # the progress bar's label; default "<name> <judge name>"
    # further judges an item's own coroutine asks (arun_stages; synthesize's responder and polisher): named with
    # ``judge`` in records and failure messages, and their secrets kept out of the log too
    also_asks: Sequence[JudgeConfig] = ()
    kind: str = "judge"  # what failed, for the --max-failure-rate message: judge, stage, generator, ...
    unit: str = "items"  # what the items are, in messages: items, turns, ...
    completion_tokens_per_request: int = 200  # the cost estimate's guess per request
    reply_fields: ReplyFields = field(default_factory=ReplyFields)

    def identity(self, item: StageItem) -> dict[str, Setting]:
        """The settings an item's logged reply must have been made under to be reused."""
        return {**self.settings, **item.settings}

    @property
    def judge_name(self) -> str:
        """The judge's name, or the names of every judge the stage asks joined by "/"."""
        return "/".join(j.name for j in (self.judge, *self.also_asks))

    @property
    def label(self) -> str:
        return self.desc or f"{self.name} {self.judge_name}"


@dataclass(frozen=True)
class StageRecord:
    """One line of a stage log: an item's reply (or failure) under the settings it was asked with."""

    stage: str
    key: str
    judge: str
    settings: dict[str, Setting]
    ok: bool
    value: JSONValue  # the parsed reply when ok, else None
    error: str | None
    reply: str | None  # the reply text (redacted), None when no reply came
    attempts: int = 0
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    malformed: tuple[dict[str, JSONValue], ...] = ()  # the replies that did not parse: attempt, reason, text
    fields: dict[str, JSONValue] = field(default_factory=dict)  # stage-specific
    time: str = ""
    legacy: bool = False  # read from a log written before the one layout (its settings are in ``fields``)

    def matches(self, stage: str, settings: Settings) -> bool:
        """Whether this record answers an item of ``stage`` asked under ``settings``. A legacy record has no
        stage or settings of its own: it matches when its fields hold the same values under the same names."""
        if self.legacy:
            return all(self.fields.get(name) == value for name, value in settings.items())
        return self.stage == stage and self.settings == dict(settings)

    def to_json(self) -> dict[str, JSONValue]:
        head: dict[str, JSONValue] = {
            "time": self.time,
            "stage": self.stage,
            "key": self.key,
            "judge": self.judge,
            "settings": dict(self.settings),
        }
        tail: dict[str, JSONValue] = {
            "ok": self.ok,
            "value": self.value,
            "error": self.error,
            "reply": self.reply,
            "attempts": self.attempts,
            "cached": self.cached,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "malformed": [dict(m) for m in self.malformed],
        }
        return {**head, **{k: v for k, v in self.fields.items() if k not in RECORD_FIELDS}, **tail}

    @classmethod
    def from_json(cls, raw: Mapping[str, JSONValue]) -> StageRecord | None:
        """A record of the one layout; None for anything else (a legacy record: see :func:`legacy_record`)."""
        key, stage, settings = raw.get("key"), raw.get("stage"), raw.get("settings")
        if not isinstance(key, str) or not isinstance(stage, str) or not isinstance(settings, dict):
            return None
        return _record(raw, key, stage, _settings(settings), {k: v for k, v in raw.items() if k not in RECORD_FIELDS})


def legacy_record(raw: Mapping[str, JSONValue]) -> StageRecord | None:
    """A record of a log written before the one layout by the judge engine or the MTRAG judges (``key``, ``ok``,
    ``value``, ``error``, ``reply`` under those names; the settings among its other fields); None without a key.
    Another path's old layout comes with its own reader (``StageLog(legacy=...)``)."""
    key = raw.get("key")
    if not isinstance(key, str):
        return None
    return _record(raw, key, "", {}, dict(raw), legacy=True)


def _record(
    raw: Mapping[str, JSONValue],
    key: str,
    stage: str,
    settings: dict[str, Setting],
    fields: dict[str, JSONValue],
    legacy: bool = False,
) -> StageRecord:
    malformed = raw.get("malformed")
    return StageRecord(
        stage=stage,
        key=key,
        judge=str(raw.get("judge") or ""),
        settings=settings,
        ok=bool(raw.get("ok")),
        value=raw.get("value"),
        error=_text(raw.get("error")),
        reply=_text(raw.get("reply")),
        attempts=_count(raw.get("attempts")),
        cached=bool(raw.get("cached")),
        prompt_tokens=_count(raw.get("prompt_tokens")),
        completion_tokens=_count(raw.get("completion_tokens")),
        malformed=tuple(m for m in malformed if isinstance(m, dict)) if isinstance(malformed, list) else (),
        fields=fields,
        time=str(raw.get("time") or ""),
        legacy=legacy,
    )


def _settings(raw: dict[str, JSONValue]) -> dict[str, Setting]:
    return {k: v for k, v in raw.items() if v is None or isinstance(v, (bool, int, float, str))}


def _text(value: JSONValue) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: JSONValue) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def record_for(stage: Stage, item: StageItem, result: ChatResult) -> StageRecord:
    """The log record of one finished item (texts in ``result`` are already redacted by the client)."""
    return StageRecord(
        stage=stage.name,
        key=item.key,
        judge=stage.judge_name,
        settings=stage.identity(item),
        ok=bool(result.ok),
        value=result.value if result.ok else None,
        error=result.error,
        reply=result.text,
        attempts=result.attempts,
        cached=result.cached,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        malformed=tuple(_malformed(m) for m in result.malformed),
        fields={**item.fields, **stage.reply_fields(item, result)},
        time=now(),
    )


def _malformed(reply: MalformedReply) -> dict[str, JSONValue]:
    return {**dict(reply.origin), "attempt": reply.attempt, "reason": reply.reason, "text": reply.text}


def combined_result(
    key: str,
    results: Sequence[ChatResult],
    value: JSONValue,
    error: str | None = None,
    by: Sequence[str] | None = None,
) -> ChatResult:
    """One ``ChatResult`` for an item that sent several requests (a debate's rounds): ok unless ``error`` or one
    of them failed; attempts, tokens and malformed replies summed; the last reply's text; ``value`` as given.
    ``by``: who sent each request (e.g. "Agent A round 1"), recorded with its malformed replies."""
    if by is not None:
        results = [
            replace(r, malformed=[replace(m, origin=(("by", who),)) for m in r.malformed])
            for r, who in zip(results, by)
        ]
    failed = next((r for r in results if not r.ok), None)
    reason = error or (failed.error if failed is not None else None)
    return ChatResult(
        key=key,
        ok=reason is None,
        text=results[-1].text if results else None,
        value=value if reason is None else None,
        error=reason,
        attempts=sum(r.attempts for r in results),
        cached=bool(results) and all(r.cached for r in results),
        prompt_tokens=sum(r.prompt_tokens for r in results),
        completion_tokens=sum(r.completion_tokens for r in results),
        malformed=[m for r in results for m in r.malformed],
    )


@dataclass
class LogContents:
    records: list[StageRecord]
    unreadable_lines: int  # lines cut short by a kill (or otherwise not a record): ignored

    def latest(self, stage: Stage) -> dict[str, StageRecord]:
        """Per item key of ``stage``: its ok record under the item's settings if there is one, else its latest
        failure under them. Records of other settings (an earlier configuration) are another question."""
        wanted = {item.key: stage.identity(item) for item in stage.items}
        out: dict[str, StageRecord] = {}
        for record in self.records:
            settings = wanted.get(record.key)
            if settings is None or not record.matches(stage.name, settings):
                continue
            previous = out.get(record.key)
            if previous is None or not previous.ok:
                out[record.key] = record
        return out


# a line of an older layout -> a (legacy) record, or None when it is not one
LegacyReader = Callable[[Mapping[str, JSONValue]], StageRecord | None]
# receives each record as it is logged (a path that keeps its own store or its results in memory)
RecordSink = Callable[[StageRecord], None]


_IDENTITY_FIELDS = frozenset({"time", "stage", "key", "judge", "settings"})


def _redacted(value: JSONValue, redactor: Redactor) -> JSONValue:
    if isinstance(value, str):
        return redactor.known(value)
    if isinstance(value, list):
        return [_redacted(item, redactor) for item in value]
    if isinstance(value, dict):
        return {name: _redacted(item, redactor) for name, item in value.items()}
    return value


class LogWriter:
    """Appends records to an open log, one flushed line each, without the judges' secrets."""

    def __init__(self, handle: LineAppender, redactor: Redactor) -> None:
        self._handle = handle
        self._redactor = redactor

    def append(self, record: StageRecord) -> None:
        raw = record.to_json()
        # Only values are redacted, never the item's identity (key, stage, judge, settings) nor the JSON's own
        # names: a short API key such as "k" or "test" must not rewrite field names or turn ids, or resume breaks.
        clean = {
            name: value if name in _IDENTITY_FIELDS else _redacted(value, self._redactor) for name, value in raw.items()
        }
        line = json_text(clean, path=f"{self._handle.path} (item {record.key})", ensure_ascii=False)
        self._handle.write(line + "\n")  # unbuffered: a killed run keeps every reply already received


class StageLog:
    """An append-only JSONL log of stage records. ``hold()`` takes its lock (a second hold by the same object is
    free, so a caller may hold it from planning to writing its results around :func:`run_stages`)."""

    def __init__(self, path: str | Path, purpose: str = "LLM log", legacy: LegacyReader = legacy_record) -> None:
        self.path = Path(path)
        self.purpose = purpose
        self.legacy = legacy  # reads a line of the layout this path's log had before the one layout
        self._held = 0

    def read(self) -> LogContents:
        numbered, bad = self.read_numbered()
        return LogContents([record for _, record in numbered], bad)

    def read_numbered(self) -> tuple[list[tuple[int, StageRecord]], int]:
        """:meth:`read`'s records, each with its line number (1-based), so a reader can name a bad value's line."""
        raw, bad = read_numbered_log_records(self.path)
        records = [(number, StageRecord.from_json(r) or self.legacy(r)) for number, r in raw]
        return [(number, r) for number, r in records if r is not None], bad

    @contextmanager
    def hold(self) -> Iterator[None]:
        lock = (
            nullcontext() if self._held else held_lock(lock_path_for(self.path), purpose=f"{self.purpose} {self.path}")
        )
        with lock:
            self._held += 1
            try:
                yield
            finally:
                self._held -= 1

    @contextmanager
    def appending(self, judges: Sequence[JudgeConfig] = ()) -> Iterator[LogWriter]:
        """The log open for appending (under its lock); a line cut short by a kill is ended first."""
        with self.hold():
            check_file_target(self.path)  # a folder in its place, or not writable: one line, before anything is asked
            cut_short = self.path.is_file() and self.path.stat().st_size > 0 and not _ends_with_newline(self.path)
            with LineAppender(self.path) as handle:
                if cut_short:  # a kill mid-write left half a line: start ours on a fresh one
                    handle.write("\n")
                yield LogWriter(handle, judge_redactor(judges))


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def judge_redactor(judges: Sequence[JudgeConfig]) -> Redactor:
    """The exact secrets of ``judges``: their API keys (from the environment) and base-URL credentials."""
    secrets: list[str] = []
    for judge in judges:
        key = os.environ.get(judge.api_key_env, "").strip()
        if key:
            secrets.append(key)
        if judge.base_url_auth is not None:
            secrets += judge.base_url_auth.secrets()
    return Redactor(secrets)


@dataclass
class StageOptions:
    cache: ResponseCache | None = None
    dry_run: bool = False
    yes: bool = False  # run without confirming the cost estimate
    show_progress: bool = True
    max_failure_rate: float | None = None  # past it (after the run), TooManyFailures; None: the caller checks


@dataclass
class StageOutcome:
    """A stage after the run (or the dry run): per item key its record (ok first), what was asked now."""

    stage: Stage
    records: dict[str, StageRecord]  # items without a key here were never answered under these settings
    pending: list[StageItem]  # the items that had no ok record before this run (asked now, unless a dry run)
    asked_now: list[StageRecord] = field(default_factory=list)  # this run's records, in arrival order
    usage: Usage = field(default_factory=Usage)  # this run's client usage

    @property
    def sent(self) -> int:
        return len(self.asked_now)

    def record(self, item: StageItem) -> StageRecord | None:
        return self.records.get(item.key)

    def answered(self, item: StageItem) -> bool:
        record = self.records.get(item.key)
        return record is not None and record.ok

    def failures(self) -> JudgeFailures:
        """Failed (or never answered) items of the stage and the most common reason, for --max-failure-rate."""
        reasons = [self._reason(item) for item in self.stage.items if not self.answered(item)]
        return JudgeFailures(
            self.stage.judge_name,
            len(reasons),
            len(self.stage.items),
            most_common(reasons),
            self.stage.kind,
            self.stage.unit,
        )

    def _reason(self, item: StageItem) -> str:
        record = self.records.get(item.key)
        return (record.error if record is not None else None) or "not answered"

    def usage_summary(self) -> dict[str, int | float | None]:
        u = self.usage
        return {
            "requests": u.requests,
            "cached": u.cached,
            "failures": u.failures,
            "prompt_tokens": u.prompt_tokens,
            "completion_tokens": u.completion_tokens,
            "cost_usd": u.cost_usd(self.stage.judge),
        }


@dataclass(frozen=True)
class DryRunReport:
    """What a real run would ask: the first prompts, the request count, and how much the log has answered."""

    text: str
    pending: int
    answered: int
    total: int


@dataclass
class StageRun:
    outcomes: list[StageOutcome]
    log_path: Path | None  # None: run without a log
    unreadable_log_lines: int
    dry_run: DryRunReport | None = None  # set (and nothing asked) for a dry run
    stopped: bool = False  # arun_stages' keep_asking said stop: the items not started by then were not asked

    def failures(self) -> list[JudgeFailures]:
        return [o.failures() for o in self.outcomes]


def _check_keys(stages: Sequence[Stage]) -> None:
    for stage in stages:
        if len({i.key for i in stage.items}) != len(stage.items):
            raise DataError(f"two items of stage {stage.name} ({stage.judge.name}) share a key")


def _secret_holders(stages: Sequence[Stage]) -> list[JudgeConfig]:
    """Every judge the stages ask, ``also_asks`` included: their secrets never reach the log."""
    return [*_judges(stages), *(j for s in stages for j in s.also_asks)]


def _judges(stages: Sequence[Stage]) -> list[JudgeConfig]:
    """The stages' judges, each once, in order of appearance."""
    seen: dict[str, JudgeConfig] = {}
    for stage in stages:
        seen.setdefault(stage.judge.name, stage.judge)
    return list(seen.values())


def _dry_run(
    stages: Sequence[Stage],
    outcomes: list[StageOutcome],
    later: Sequence[Stage],
    log: StageLog | None,
    shown: Sequence[ChatRequest] | None,
) -> DryRunReport:
    if shown is None:
        shown = [i.request for o in outcomes for i in o.pending] + [i.request for s in later for i in s.items]
    total = sum(len(s.items) for s in stages)
    pending = sum(len(o.pending) for o in outcomes)
    unit = stages[0].unit if stages else "items"
    text = dry_run_text(shown, _judges(stages))
    if log is not None:
        text += f"\n{total - pending} of {total} {unit} already answered in {log.path}"
    report(text)
    return DryRunReport(text=text, pending=pending, answered=total - pending, total=total)


def cost_estimates(
    stages: Sequence[Stage], cache: ResponseCache | None, order: Sequence[JudgeConfig] = ()
) -> list[tuple[JudgeConfig, CostEstimate]]:
    """One estimate per judge (in ``order``, else as the stages name them) over the stages' items; a judge with
    nothing to ask is left out."""
    by_judge: dict[str, list[ChatRequest]] = {}
    per_request = {s.judge.name: s.completion_tokens_per_request for s in stages}
    for stage in stages:
        by_judge.setdefault(stage.judge.name, []).extend(i.request for i in stage.items)
    return [
        (judge, estimate_cost(by_judge[judge.name], judge, cache, per_request[judge.name]))
        for judge in (order or _judges(stages))
        if by_judge.get(judge.name)
    ]


def plan_stages(stages: Sequence[Stage], log: StageLog | None) -> StageRun:
    """Each stage's logged records and pending items (every item when there is no log); nothing is asked."""
    _check_keys(stages)
    contents = log.read() if log is not None else LogContents([], 0)
    outcomes = []
    for stage in stages:
        latest = contents.latest(stage)
        pending = [i for i in stage.items if not (i.key in latest and latest[i.key].ok)]
        outcomes.append(StageOutcome(stage, latest, pending))
    return StageRun(outcomes, log.path if log is not None else None, contents.unreadable_lines)


def _to_ask(outcomes: Sequence[StageOutcome]) -> list[Stage]:
    return [replace(o.stage, items=o.pending) for o in outcomes if o.pending]


def _finish(run: StageRun, options: StageOptions) -> StageRun:
    if options.max_failure_rate is not None:
        raise_if_over(
            run.failures(),
            options.max_failure_rate,
            "the log keeps the reasons; a re-run asks only the failed items again",
        )
    return run


class _Recorder:
    """Takes each finished item: its record to the log (if any), the outcome, and the caller's sink."""

    def __init__(self, writer: LogWriter | None, sink: RecordSink | None) -> None:
        self.writer = writer
        self.sink = sink

    def take(self, outcome: StageOutcome, item: StageItem, result: ChatResult) -> None:
        record = record_for(outcome.stage, item, result)
        if self.writer is not None:
            self.writer.append(record)
        outcome.records[item.key] = record
        outcome.asked_now.append(record)
        if self.sink is not None:
            self.sink(record)


@contextmanager
def _recording(
    log: StageLog | None, stages: Sequence[Stage], sink: RecordSink | None, also: Sequence[JudgeConfig] = ()
) -> Iterator[_Recorder]:
    if log is None:
        yield _Recorder(None, sink)
        return
    with log.appending([*_secret_holders(stages), *also]) as writer:
        yield _Recorder(writer, sink)


def run_stages(
    stages: Sequence[Stage],
    log: StageLog | None,
    options: StageOptions,
    *,
    clients: Mapping[str, ChatRunner] | None = None,
    costed_later: Sequence[Stage] = (),
    confirm: bool = True,
    shown: Sequence[ChatRequest] | None = None,
    on_record: RecordSink | None = None,
) -> StageRun:
    """Ask every item of ``stages`` that ``log`` has not answered under the same settings (every item when
    ``log`` is None: a path that keeps its results itself, through ``on_record`` or the returned outcomes).

    One cost question for all of them (plus ``costed_later``: items a later call will ask, e.g. a second step;
    ``confirm=False``: confirmed by an earlier call), one client per judge (``clients`` by judge name, else made
    from the judge). A dry run asks nothing and returns its report in ``StageRun.dry_run``; it shows the prompts
    of ``shown`` (default: every pending item's, then ``costed_later``'s) and counts them per judge."""
    run = plan_stages(stages, log)
    if options.dry_run:
        run.dry_run = _dry_run(stages, run.outcomes, costed_later, log, shown)
        return run
    to_ask = _to_ask(run.outcomes)
    if not to_ask and not any(s.items for s in costed_later):
        return _finish(run, options)
    given = dict(clients or {})
    # made before the cost question: a missing API key stops the run before anything is asked
    made = {j.name: given.get(j.name) or make_client(j, options.cache) for j in _judges(stages)}
    if confirm:
        order = _judges([*stages, *costed_later])
        confirm_cost(cost_estimates([*to_ask, *costed_later], options.cache, order), options.yes)
    if not to_ask:
        return _finish(run, options)
    with _recording(log, stages, on_record) as recorder:
        for outcome in run.outcomes:
            if outcome.pending:
                _ask(outcome, made[outcome.stage.judge.name], recorder, options.show_progress)
    return _finish(run, options)


def _ask(outcome: StageOutcome, client: ChatRunner, recorder: _Recorder, show_progress: bool) -> None:
    by_key = {i.key: i for i in outcome.pending}
    before = _usage_copy(client.usage)
    requests = [i.request for i in outcome.pending]
    try:
        client.run(
            requests,
            desc=outcome.stage.label,
            show_progress=show_progress,
            on_result=lambda result: recorder.take(outcome, by_key[result.key], result),
        )
    finally:
        outcome.usage = _usage_since(before, client.usage)


def _usage_copy(usage: Usage) -> Usage:
    return Usage(
        usage.requests, usage.cached, usage.failures, usage.items, usage.prompt_tokens, usage.completion_tokens
    )


def _usage_since(before: Usage, after: Usage) -> Usage:
    return Usage(
        after.requests - before.requests,
        after.cached - before.cached,
        after.failures - before.failures,
        after.items - before.items,
        after.prompt_tokens - before.prompt_tokens,
        after.completion_tokens - before.completion_tokens,
    )


def run_stage(
    stage: Stage,
    log: StageLog | None,
    options: StageOptions,
    *,
    client: ChatRunner | None = None,
    on_record: RecordSink | None = None,
) -> tuple[StageOutcome, StageRun]:
    """:func:`run_stages` for one stage: (its outcome, the run)."""
    clients = {stage.judge.name: client} if client is not None else None
    run = run_stages([stage], log, options, clients=clients, on_record=on_record)
    return run.outcomes[0], run


# -- items that ask through their own coroutine (several requests, several judges, async clients) -----------------

# asks one item of a stage (all its requests) and returns one result for it
ItemAsker = Callable[[Stage, StageItem], Awaitable[ChatResult]]


async def arun_stages(
    stages: Sequence[Stage],
    log: StageLog | None,
    options: StageOptions,
    ask: ItemAsker,
    *,
    concurrency: int,
    estimates: Sequence[tuple[JudgeConfig, CostEstimate]] | None = None,
    confirm: bool = True,
    also_asked: Sequence[JudgeConfig] = (),
    shown: Sequence[ChatRequest] | None = None,
    on_record: RecordSink | None = None,
    keep_asking: Callable[[], bool] | None = None,
) -> StageRun:
    """:func:`run_stages` for items that ask through a coroutine (``ask(stage, item)``: one ``ChatResult`` per item,
    see :func:`combined_result`), at most ``concurrency`` items in flight. ``estimates``: the cost to confirm
    (e.g. an upper bound over every round), else each item's first request per stage's judge; ``confirm=False``:
    an earlier call confirmed it, or the caller estimated and capped the cost itself. ``also_asked``: judges the
    items ask besides the stages' own (a pre-filter's three), whose secrets are kept out of the log as well.
    ``keep_asking`` (e.g. a spending cap) is asked as each item gets its slot: once it says no, the items not
    started are left unasked and ``StageRun.stopped`` is set. The caller makes and closes its (async) clients;
    ``StageOutcome.usage`` counts items and failures only."""
    run = plan_stages(stages, log)
    if options.dry_run:
        run.dry_run = _dry_run(stages, run.outcomes, (), log, shown)
        return run
    to_ask = _to_ask(run.outcomes)
    if not to_ask:
        return _finish(run, options)
    if confirm:
        confirm_cost(list(estimates) if estimates is not None else cost_estimates(to_ask, options.cache), options.yes)
    work = [(o, i) for o in run.outcomes for i in o.pending]
    semaphore = asyncio.Semaphore(max(1, concurrency))
    label = " + ".join(s.label for s in to_ask)
    bar = progress_bar(
        total=len(work), desc=label, unit="item", show_progress=options.show_progress, dynamic_ncols=True
    )
    with _recording(log, stages, on_record, also_asked) as recorder:

        async def one(outcome: StageOutcome, item: StageItem) -> None:
            async with semaphore:
                if run.stopped or (keep_asking is not None and not keep_asking()):
                    run.stopped = True
                    return
                result = await ask(outcome.stage, item)
            recorder.take(outcome, item, result)
            outcome.usage.items += 1
            outcome.usage.failures += 0 if result.ok else 1
            bar.update(1)

        try:
            await asyncio.gather(*(one(o, i) for o, i in work))
        finally:
            bar.close()
    return _finish(run, options)
