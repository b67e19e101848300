"""Transcripts: ``sessions.jsonl`` (every session, every turn's reply and passages, its status) and the same
sessions as a native mtrbench task folder (``corpus.jsonl``, ``conversations/<split>.jsonl``), so ``mtrbench eval
--task FOLDER`` and every other command read the simulated conversations.

In the task view each simulated user message is a query judged by its need's passages (the union of the source
conversation's judgments); a session without a single answered-or-failed turn has no query and is left out there
(``sessions.jsonl`` keeps it). A failed system turn reads as an empty assistant message. ``answers.jsonl`` holds
the answered turns as a generations file (qid ``<session>_<turn>``), for ``mtrbench judge nuggets`` and
``simulate score --nuggets``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtrbench.data.model import Corpus
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import DataError
from mtrbench.simulate.profiles import Profile
from mtrbench.simulate.session import Session
from mtrbench.simulate.systems import SystemReply

SESSIONS = "sessions.jsonl"
SUMMARY = "simulate.json"
ANSWERS = "answers.jsonl"  # a generations file (mtrbench.formats.generations): `judge nuggets` reads it


def session_json(session: Session, profile: Profile) -> dict[str, Any]:
    need = session.need
    return {
        "session_id": session.session_id,
        "need_id": need.need_id,
        "profile": profile.name,
        "status": session.status,
        "closing": session.closing,
        "user_error": session.user_error,
        "qrels": dict(need.qrels),
        "gold_responses": list(need.responses),
        "turns": [{"turn": n, "utterance": t.utterance, **t.reply.to_json()} for n, t in enumerate(session.turns, 1)],
    }


def conversation_json(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """One session as a native-format conversation, or None when it has no turn."""
    if not record["turns"]:
        return None
    qrels = [{"doc_id": d, "score": g} for d, g in record["qrels"].items()]
    messages: list[dict[str, Any]] = []
    for turn in record["turns"]:
        reply = SystemReply.from_json(turn)
        messages.append({"role": "user", "content": turn["utterance"], "qrels": qrels})
        messages.append({"role": "assistant", "content": reply.shown if reply.ok else ""})
    return {
        "conversation_id": record["session_id"],
        "need_id": record["need_id"],
        "profile": record["profile"],
        "status": record["status"],
        "messages": messages,
    }


def answer_records(record: Mapping[str, Any], system: str) -> list[dict[str, Any]]:
    """The session's answered turns as generations (a failed turn or a clarifying question is no answer)."""
    return [
        {
            "qid": f"{record['session_id']}_{turn['turn']}",
            "answer": turn["response"],
            "passages": [p["id"] for p in turn["passages"]],
            "conversation_id": record["session_id"],
            "turn": turn["turn"],
            "question": turn["utterance"],
            "generator": system,
            "source": "simulated",
        }
        for turn in record["turns"]
        if turn["ok"] and turn["response"].strip() and not turn.get("clarifying_question")
    ]


def write_transcripts(
    folder: Path, sessions: Sequence[Session], profile: Profile, corpus: Corpus, split: str, summary: dict[str, Any]
) -> None:
    records = [session_json(s, profile) for s in sessions]
    atomic_write_text(folder / SESSIONS, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    conversations = [c for c in (conversation_json(r) for r in records) if c is not None]
    atomic_write_text(
        folder / "conversations" / f"{split}.jsonl",
        "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in conversations),
    )
    rows = (
        {"_id": doc_id, "title": title, "text": text}
        for doc_id, title, text in zip(corpus.ids, corpus.titles, corpus.texts)
    )
    atomic_write_text(folder / "corpus.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    system = str(summary.get("system", {}).get("kind", "system"))
    answers = [a for r in records for a in answer_records(r, system)]
    atomic_write_text(folder / ANSWERS, "".join(json.dumps(a, ensure_ascii=False) + "\n" for a in answers))
    atomic_write_text(folder / SUMMARY, json.dumps({**summary, "split": split}, indent=2, ensure_ascii=False) + "\n")


@dataclass(frozen=True)
class Transcripts:
    folder: Path
    records: list[dict[str, Any]]
    summary: dict[str, Any]


def read_transcripts(folder: str | Path) -> Transcripts:
    """The sessions a ``simulate run`` wrote in ``folder``; a missing or broken file is one error naming it."""
    folder = Path(folder)
    path = folder / SESSIONS
    if not path.is_file():
        raise DataError(f"{folder}: no {SESSIONS} (write one with `mtrbench simulate run --output-dir {folder}`)")
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path} line {number}: not JSON ({exc.msg})") from None
        if not isinstance(raw, dict) or not isinstance(raw.get("turns"), list) or "session_id" not in raw:
            raise DataError(f"{path} line {number}: not a session record (session_id, turns)")
        records.append(raw)
    summary_path = folder / SUMMARY
    summary = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.is_file() else {}
    return Transcripts(folder, records, summary)
