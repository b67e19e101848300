"""The session loop: a simulated user and a system under test take turns until the need is met or patience ends.

Round ``t`` asks every open session's user for its ``t``-th message (one stage of the LLM stage runner: resume
from ``user.jsonl`` under the same prompt, model, profile and seed; the cost question; failure counting), then
asks the system for each message not answered in ``system.jsonl`` (append-only; a logged turn whose request is
the same is reused, so a killed run resumes with no request repeated). After ``max_turns`` system turns the user
is asked once more, only to say whether it is satisfied; otherwise it abandons the session.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.data.model import ASSISTANT, USER, Message
from mtrbench.formats.lines import read_numbered_log_records
from mtrbench.infra.atomic import LineAppender
from mtrbench.infra.reporting import progress_bar
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.failure_rate import JudgeFailures, most_common
from mtrbench.llm.hf import make_client
from mtrbench.llm.stage import JSONValue, Stage, StageItem, StageLog, StageOptions, StageRecord, now, run_stages
from mtrbench.llm.types import ChatRequest, ChatRunner
from mtrbench.simulate.needs import InformationNeed
from mtrbench.simulate.profiles import Profile
from mtrbench.simulate.prompts import (
    PROMPT_VERSION,
    REPLY_FORMAT,
    Exchange,
    parse_user_reply,
    prompt_hash,
    user_messages,
)
from mtrbench.simulate.systems import System, SystemReply, SystemRequest

STAGE = "simulate-user"
USER_LOG = "user.jsonl"
SYSTEM_LOG = "system.jsonl"
OPEN, SATISFIED, ABANDONED, USER_FAILED = "open", "satisfied", "abandoned", "user_failed"


@dataclass(frozen=True)
class Turn:
    utterance: str
    reply: SystemReply


@dataclass
class Session:
    need: InformationNeed
    turns: list[Turn] = field(default_factory=list)
    status: str = OPEN
    closing: str = ""  # the user's last message, the one that ended the session (without the marker)
    user_error: str | None = None

    @property
    def session_id(self) -> str:
        return self.need.need_id

    def exchanges(self) -> list[Exchange]:
        return [
            Exchange(
                t.utterance, t.reply.shown if t.reply.ok else None, bool(t.reply.ok and t.reply.clarifying_question)
            )
            for t in self.turns
        ]

    def history(self) -> tuple[Message, ...]:
        out: list[Message] = []
        for t in self.turns:
            out += [Message(USER, t.utterance), Message(ASSISTANT, t.reply.shown if t.reply.ok else "")]
        return tuple(out)


@dataclass(frozen=True)
class SessionOptions:
    folder: Path
    profile: Profile
    seed: int | None = None
    cache: ResponseCache | None = None
    yes: bool = False
    show_progress: bool = True


@dataclass
class SessionRun:
    sessions: list[Session]
    user_failures: JudgeFailures
    system_failures: JudgeFailures
    user_requests: int = 0  # sent in this run (the rest came from the log)
    system_requests: int = 0


class SystemLog:
    """``system.jsonl``: one line per answered system turn (its request and reply), appended as it comes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        records, _ = read_numbered_log_records(path)
        self.cut_short = path.is_file() and not path.read_bytes().endswith(b"\n") and path.stat().st_size > 0
        self.logged: dict[str, dict[str, Any]] = {}
        for _, raw in records:
            if isinstance(raw.get("key"), str) and isinstance(raw.get("reply"), dict):
                self.logged[raw["key"]] = raw

    def reply_for(self, key: str, request: SystemRequest) -> SystemReply | None:
        raw = self.logged.get(key)
        if raw is None or raw.get("request") != request.to_json():
            return None
        return SystemReply.from_json(raw["reply"])

    def append(self, handle: LineAppender, key: str, request: SystemRequest, reply: SystemReply) -> None:
        line = {"time": now(), "key": key, "request": request.to_json(), "reply": reply.to_json()}
        handle.write(json.dumps(line, ensure_ascii=False) + "\n")


def _user_stage(
    sessions: Sequence[Session], turn: int, judge: JudgeConfig, options: SessionOptions
) -> tuple[Stage, dict[str, Session]]:
    items, by_key = [], {}
    for session in sessions:
        messages = user_messages(session.need, options.profile, session.exchanges())
        key = f"{session.session_id}/user/{turn}"
        request = ChatRequest(key=key, messages=messages, parse=parse_user_reply, reply_format=REPLY_FORMAT)
        fields: dict[str, JSONValue] = {"session_id": session.session_id, "turn": turn}
        items.append(StageItem(key, request, {"prompt_hash": prompt_hash(messages)}, fields))
        by_key[key] = session
    settings = {"model": judge.model, "prompt": PROMPT_VERSION, "seed": options.seed, **options.profile.settings()}
    stage = Stage(STAGE, judge, items, settings, desc=f"user turn {turn}", kind="user simulator", unit="turns")
    return stage, by_key


def run_sessions(
    needs: Sequence[InformationNeed],
    system: System,
    judge: JudgeConfig,
    options: SessionOptions,
    client: ChatRunner | None = None,
) -> SessionRun:
    """Every need's session, to its end; the logs in ``options.folder`` make a rerun resume."""
    sessions = [Session(need) for need in needs]
    user_log = StageLog(options.folder / USER_LOG, purpose="simulated user log")
    system_log = SystemLog(options.folder / SYSTEM_LOG)
    # one client for every round: an in-process model (hf://) loads once
    clients = {judge.name: client if client is not None else make_client(judge, options.cache)}
    run = SessionRun(sessions, JudgeFailures(judge.name, 0, 0), JudgeFailures("system", 0, 0))
    user_reasons: list[str | None] = []
    confirmed = False
    with user_log.hold(), LineAppender(system_log.path) as handle:
        if system_log.cut_short:  # a kill mid-write left half a line: ours start on a fresh one
            handle.write("\n")
        for turn in range(1, options.profile.max_turns + 2):
            active = [s for s in sessions if s.status == OPEN]
            if not active:
                break
            stage, by_key = _user_stage(active, turn, judge, options)
            stage_options = StageOptions(options.cache, yes=options.yes, show_progress=options.show_progress)
            # the cost is confirmed once, for the first round that asks anything (a resumed run may ask none at first)
            asked = run_stages([stage], user_log, stage_options, clients=clients, confirm=not confirmed)
            outcome = asked.outcomes[0]
            confirmed = confirmed or bool(outcome.pending)
            run.user_requests += outcome.sent
            asking: dict[str, str] = {}  # session id -> the message the system is asked to answer
            for key, session in by_key.items():
                reason, utterance = _take_user_reply(session, outcome.records.get(key), turn, options)
                user_reasons.append(reason)
                if utterance is not None:
                    asking[session.session_id] = utterance

            def respond(session: Session, t: int = turn, pending: dict[str, str] = asking) -> bool:
                return _system_turn(session, t, pending[session.session_id], system, system_log, handle)

            waiting = [s for s in active if s.session_id in asking]
            run.system_requests += _each(waiting, respond, f"system turn {turn}", options.show_progress)
    failed = [r for r in user_reasons if r is not None]
    run.user_failures = JudgeFailures(judge.name, len(failed), len(user_reasons), most_common(failed),
                                      "user simulator", "turns")  # fmt: skip
    run.system_failures = system_failures(sessions)
    return run


def dry_run_sessions(needs: Sequence[InformationNeed], judge: JudgeConfig, options: SessionOptions) -> str:
    """The first round's prompts and how many of them the log answers (reported); nothing is asked or written."""
    stage, _ = _user_stage([Session(need) for need in needs], 1, judge, options)
    planned = run_stages([stage], StageLog(options.folder / USER_LOG), StageOptions(dry_run=True))
    return planned.dry_run.text if planned.dry_run is not None else ""


def _take_user_reply(
    session: Session, record: StageRecord | None, turn: int, options: SessionOptions
) -> tuple[str | None, str | None]:
    """Apply the user's reply to its session: (the failure reason, or None; the message for the system, or None
    when the session ended)."""
    if record is None or not record.ok or not isinstance(record.value, dict):
        session.status = USER_FAILED
        session.user_error = (record.error if record is not None else None) or "not answered"
        return session.user_error, None
    utterance, satisfied = str(record.value.get("utterance") or ""), bool(record.value.get("satisfied"))
    if turn == 1 and not utterance:
        session.status, session.user_error = USER_FAILED, "ended the session before asking anything"
        return session.user_error, None
    if satisfied and turn > 1:
        session.status, session.closing = SATISFIED, utterance
    elif turn > options.profile.max_turns:  # patience ran out: this message is never answered
        session.status, session.closing = ABANDONED, utterance
    else:
        return None, utterance
    return None, None


def _system_turn(
    session: Session, turn: int, utterance: str, system: System, log: SystemLog, handle: LineAppender
) -> bool:
    """Ask the system for the session's turn (or reuse the logged reply); True when a request was sent."""
    request = SystemRequest(session.session_id, turn, utterance, session.history())
    key = f"{session.session_id}/system/{turn}"
    reply = log.reply_for(key, request)
    sent = reply is None
    if reply is None:
        reply = system.respond(request)
        log.append(handle, key, request, reply)
    session.turns.append(Turn(utterance, reply))
    return sent


def _each(sessions: Sequence[Session], respond: Callable[[Session], bool], desc: str, show_progress: bool) -> int:
    sent = 0
    with progress_bar(total=len(sessions), desc=desc, unit="turn", show_progress=show_progress) as bar:
        for session in sessions:
            sent += respond(session)
            bar.update(1)
    return sent


def system_failures(sessions: Sequence[Session]) -> JudgeFailures:
    replies = [t.reply for s in sessions for t in s.turns]
    reasons = [r.error for r in replies if not r.ok]
    return JudgeFailures("system", len(reasons), len(replies), most_common(reasons), "system", "turns")
