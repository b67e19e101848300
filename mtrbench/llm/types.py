"""The values every LLM path passes around, apart from the HTTP client that produces them.

A ``ChatRequest`` (what to ask, how to read the reply), its ``ChatResult``, the ``Usage`` a client counts, the
``ChatRunner`` protocol every client meets (``ChatClient``, the in-process ``hf.HFChatClient``, a test's stand-in),
and the request's identity (its sampling parameters and cache key). Nothing here sends a request, so the client,
the cost estimate and the re-ask rules all import this module and none of them imports another for its types.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from mtrbench.llm.cache import request_key
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.prices import usd_for_tokens

# What a parse function raises for a malformed reply (a KeyError from data["score"] is one too).
PARSE_ERRORS = (ValueError, KeyError, IndexError, TypeError)


@dataclass(frozen=True)
class MalformedReply:
    """One reply that could not be parsed (its text already redacted), kept for the failure logs."""

    attempt: int  # 1 for the original request, 2 for the first re-ask, ...
    reason: str
    text: str | None  # None when the server's 200 held no message at all
    # which request of an item that sends several it answered, as (name, value) pairs written before attempt,
    # reason and text (synthesize: agent and request key; assess: ("by", "Agent A round 1"))
    origin: tuple[tuple[str, str], ...] = ()

    def as_dict(self) -> dict[str, object]:
        return {**dict(self.origin), "attempt": self.attempt, "reason": self.reason, "text": self.text}


@dataclass
class ChatRequest:
    key: str  # caller's id for the item (used in results/progress, not sent)
    messages: list[dict[str, str]]  # [{"role": "system"|"user"|"assistant", "content": ...}]
    parse: Callable[[str], Any] | None = None  # reply text -> value; raise ExtractionError/ValueError if malformed
    want_json: bool = False  # ask for JSON mode when the server offers it
    params: dict[str, Any] = field(default_factory=dict)  # per-request overrides (temperature, max_tokens, ...)
    reply_format: str = ""  # the exact format expected, restated when a malformed reply is asked for again

    def read(self, text: str) -> Any:
        """The reply's value (the text itself without ``parse``). A value holding NaN or infinity (JSON replies may
        spell them) is a malformed reply, asked again like any other: nothing non-finite reaches a log or a score."""
        value = self.parse(text) if self.parse is not None else text
        if _holds_non_finite(value):
            raise ValueError("the reply holds a number that is not finite (NaN or infinity)")
        return value


def _holds_non_finite(value: object) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_holds_non_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_non_finite(v) for v in value)
    return False


@dataclass
class ChatResult:
    key: str
    ok: bool
    text: str | None  # raw reply text of the last attempt (None when no reply came)
    value: Any  # parse(text) when ok, else None
    error: str | None  # short reason when not ok
    attempts: int  # HTTP requests sent for this item (0 when served from cache)
    cached: bool
    prompt_tokens: int  # tokens billed for this item over all its attempts (0 when cached)
    completion_tokens: int
    malformed: list[MalformedReply] = field(default_factory=list)  # replies that did not parse, redacted


@dataclass
class Usage:
    requests: int = 0  # HTTP requests sent, retries included
    cached: int = 0  # items served from the cache
    failures: int = 0  # items that ended with ok=False
    items: int = 0  # items finished, ok or not, cached included
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def cost_usd(self, judge: JudgeConfig) -> float | None:
        return usd_for_tokens(judge, self.prompt_tokens, self.completion_tokens)


class ChatRunner(Protocol):
    """What callers use of a chat client (``ChatClient``, the in-process ``hf.HFChatClient``, a test's
    stand-in): complete requests, results in request order, and count usage."""

    usage: Usage

    def run(
        self,
        requests: Sequence[ChatRequest],
        *,
        desc: str = "LLM",
        show_progress: bool = True,
        on_result: Callable[[ChatResult], None] | None = None,
    ) -> list[ChatResult]: ...


def uses_json_mode(judge: JudgeConfig, request: ChatRequest) -> bool:
    """Whether a request asks for JSON mode at all (the runtime fallback does not change its cache key)."""
    return request.want_json and judge.json_mode is not False


def generation_params(judge: JudgeConfig, request: ChatRequest) -> dict[str, Any]:
    """Sampling parameters sent with a request: the judge's, overridden by the request's."""
    params = {"temperature": judge.temperature, "max_tokens": judge.max_tokens, **judge.extra_body}
    params.update(request.params)
    return params


def cache_key(judge: JudgeConfig, request: ChatRequest) -> str:
    params = dict(generation_params(judge, request), json_mode=uses_json_mode(judge, request))
    return request_key(judge.model, request.messages, params)


def short_reason(err: BaseException) -> str:
    """One line of at most 200 characters: a parse error's message, else the exception type and message."""
    text = " ".join(str(err).split())[:200] or type(err).__name__
    return text if isinstance(err, ValueError) else f"{type(err).__name__}: {text}"
