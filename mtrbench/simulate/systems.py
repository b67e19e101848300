"""Systems under test and the HTTP JSON contract an external one meets (docs/simulate.md).

Request (POST, ``application/json``)::

    {"session_id": str, "turn": int (1-based), "utterance": str,
     "history": [{"role": "user"|"assistant", "content": str}, ...]}

Response::

    {"response": str, "passages": [{"id": str, "score": number, "text": str?}, ...],
     "clarifying_question": str | null (optional)}

A turn whose request fails (connection, HTTP status, time limit) or whose body breaks the contract is a failed
turn: recorded with its reason, never scored as an empty answer.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from mtrbench.data.model import Message


@dataclass(frozen=True)
class Passage:
    doc_id: str
    score: float
    text: str | None = None


@dataclass(frozen=True)
class SystemRequest:
    session_id: str
    turn: int
    utterance: str
    history: tuple[Message, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "turn": self.turn,
            "utterance": self.utterance,
            "history": [{"role": m.role, "content": m.content} for m in self.history],
        }


@dataclass(frozen=True)
class SystemReply:
    ok: bool
    response: str = ""
    passages: tuple[Passage, ...] = ()
    clarifying_question: str | None = None
    error: str | None = None  # why the turn failed

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "response": self.response,
            "passages": [_passage_json(p) for p in self.passages],
            "clarifying_question": self.clarifying_question,
            "error": self.error,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> SystemReply:
        if not raw.get("ok"):
            return failed(str(raw.get("error") or "failed"))
        return parse_reply(raw)

    @property
    def shown(self) -> str:
        """What the user reads: the clarifying question when the system asked one, else its response."""
        return self.clarifying_question or self.response


def _passage_json(p: Passage) -> dict[str, Any]:
    out: dict[str, Any] = {"id": p.doc_id, "score": p.score}
    if p.text is not None:
        out["text"] = p.text
    return out


def failed(reason: str) -> SystemReply:
    return SystemReply(ok=False, error=reason)


class System(Protocol):
    """What the session loop asks of a system under test."""

    def settings(self) -> dict[str, Any]:
        """What identifies the system (recorded with its sessions)."""

    def respond(self, request: SystemRequest) -> SystemReply: ...


def parse_reply(raw: Any) -> SystemReply:
    """A contract response as a reply; a body that breaks the contract raises ValueError naming what is wrong."""
    if not isinstance(raw, dict):
        raise ValueError("the body is not a JSON object")
    response, clarifying = raw.get("response"), raw.get("clarifying_question")
    if not isinstance(response, str):
        raise ValueError("'response' is missing or not a string")
    if clarifying is not None and not isinstance(clarifying, str):
        raise ValueError("'clarifying_question' is not a string")
    passages = raw.get("passages", [])
    if not isinstance(passages, list):
        raise ValueError("'passages' is not a list")
    return SystemReply(True, response, tuple(_passage(p, n) for n, p in enumerate(passages)), clarifying or None)


def _passage(raw: Any, n: int) -> Passage:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        raise ValueError(f"passages[{n}] needs a string 'id'")
    score, text = raw.get("score"), raw.get("text")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        raise ValueError(f"passages[{n}] needs a finite number 'score'")
    if text is not None and not isinstance(text, str):
        raise ValueError(f"passages[{n}] 'text' is not a string")
    return Passage(raw["id"], float(score), text)


@dataclass
class HttpSystem:
    """An external system behind the contract at ``url``."""

    url: str
    timeout_s: float = 60.0
    headers: dict[str, str] = field(default_factory=dict)

    def settings(self) -> dict[str, Any]:
        return {"kind": "http", "url": self.url}

    def respond(self, request: SystemRequest) -> SystemReply:
        body = json.dumps(request.to_json(), ensure_ascii=False).encode("utf-8")
        sent = urllib.request.Request(
            self.url, data=body, headers={"Content-Type": "application/json", **self.headers}, method="POST"
        )
        try:
            with urllib.request.urlopen(sent, timeout=self.timeout_s) as answer:
                text = answer.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            return failed(f"HTTP {exc.code}")
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            return failed(f"no reply ({reason})"[:200])
        try:
            return parse_reply(json.loads(text))
        except json.JSONDecodeError:
            return failed("malformed JSON in the reply")
        except ValueError as exc:
            return failed(f"reply breaks the contract: {exc}")


def top_ids(passages: Sequence[Passage], k: int) -> list[str]:
    return [p.doc_id for p in passages[:k]]
