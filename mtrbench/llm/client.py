"""Chat-completions client for any OpenAI-compatible server (OpenAI, vLLM, SGLang, DeepSeek, OpenRouter).

The ``openai`` package does the HTTP; retries are ours (its own are disabled) so that transport
failures and unparseable replies are counted the same way everywhere:

- timeouts, connection errors, 408/409/429 and 5xx are retried with exponential backoff and jitter
  (a server's Retry-After is honoured, capped); other 4xx fail at once;
- a 400 to a request that carried ``response_format`` turns JSON mode off for this server and the
  request is sent again once without it;
- a timeout waits longer than other failures before its retry (``timeout_backoff``): the server is
  likely still computing the abandoned request, and re-sending at once only piles work on it;
- a reply that ``request.parse`` rejects is asked for again (never served from cache) up to
  ``parse_retries`` times, each time with a changed request (``mtrbench.llm.reask``: a repair turn
  quoting the reply, then another seed/temperature), then reported as a failure; it is never scored.
  Every malformed reply is kept, redacted, in ``ChatResult.malformed`` for the caller's log.

The API key is read from the environment at construction and handed only to the HTTP client, as are
credentials a base URL carried (sent as HTTP Basic auth; the URL kept and shown has none). Every error
text this module produces passes through the judge's ``Redactor``, and reply texts lose any exact secret.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import openai
from tqdm.auto import tqdm

from mtrbench.infra.errors import LLMError, UserInputError
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import (  # noqa: F401 (DEFAULT_BASE_URL, LOCAL_HOSTS: importable here as before)
    DEFAULT_BASE_URL,
    LOCAL_HOSTS,
    JudgeConfig,
    display_url,
    is_local_url,
    resolve_base_url,
)
from mtrbench.llm.reask import reask_request
from mtrbench.llm.redact import Redactor, split_userinfo
from mtrbench.llm.types import (  # noqa: F401 (ChatRunner, Usage, uses_json_mode: importable here as before)
    PARSE_ERRORS,
    ChatRequest,
    ChatResult,
    ChatRunner,
    MalformedReply,
    Usage,
    cache_key,
    generation_params,
    short_reason,
    uses_json_mode,
)

log = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 409, 429})
_PLACEHOLDER_KEY = "not-needed"  # local servers ignore the key, but the HTTP client insists on one


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds a server asked us to wait (``retry-after-ms``, ``retry-after`` seconds or HTTP date)."""
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            value = float(raw_ms) / 1000.0
            return value if math.isfinite(value) and value >= 0 else None
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        value = float(raw)
        return value if math.isfinite(value) and value >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass
class _Outcome:
    """What the transport loop got for one logical request."""

    attempts: int
    text: str | None = None
    error: str | None = None  # transport failure: give up
    malformed: str | None = None  # a 200 whose body holds no message: treated like an unparseable reply
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class _Tally:
    """What the sends for one logical request added up to, over its re-asks."""

    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    parse_attempts: int = 0  # replies read (each transport success is one)
    malformed: list[MalformedReply] = field(default_factory=list)

    def add(self, outcome: _Outcome) -> None:
        self.attempts += outcome.attempts
        self.prompt_tokens += outcome.prompt_tokens
        self.completion_tokens += outcome.completion_tokens


class ChatClient:
    """One judge's connection. ``run`` for a batch from sync code, ``acomplete`` from async code.

    ``backoff_base_s``/``backoff_max_s`` shape the exponential backoff; ``retry_after_max_s`` caps how
    long a server's Retry-After may make us wait.
    """

    def __init__(
        self,
        judge: JudgeConfig,
        cache: ResponseCache | None = None,
        *,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 60.0,
        retry_after_max_s: float = 120.0,
    ) -> None:
        if (judge.base_url or "").startswith("hf://"):
            raise UserInputError(
                f"judge '{judge.name}': {judge.base_url} runs in-process, which this command does "
                "not support; serve the model over HTTP (vLLM, SGLang) or use it with generate, "
                "eval's rewriter or audit"
            )
        self.judge = judge
        self.cache = cache
        # OPENAI_BASE_URL may carry user:password too; the judge's own were split off when it was made
        self.base_url, url_credentials = split_userinfo(resolve_base_url(judge))
        self._credentials = url_credentials or judge.base_url_auth
        key = os.environ.get(judge.api_key_env, "").strip()
        if not key:
            if not is_local_url(self.base_url):
                raise UserInputError(
                    f"environment variable {judge.api_key_env} is not set: it must hold the API key for judge "
                    f"'{judge.name}' at {display_url(self.base_url)} (choose another variable with api_key_env "
                    "in the judges file or --api-key-env)"
                )
            key = _PLACEHOLDER_KEY
        self._api_key = key
        self._redactor = Redactor(
            ([] if key == _PLACEHOLDER_KEY else [key]) + (self._credentials.secrets() if self._credentials else [])
        )
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.retry_after_max_s = retry_after_max_s
        self.usage = Usage()
        self._json_mode_refused = False  # the server answered 400 to response_format
        self._failures_in_a_row = 0  # items whose transport failed, since the last reply of any kind
        self._stopped: str | None = None  # set once too many failed in a row: every later call raises it
        self._loop_state: tuple[asyncio.AbstractEventLoop, openai.AsyncOpenAI, asyncio.Semaphore] | None = None

    def __repr__(self) -> str:
        return (
            f"ChatClient(judge={self.judge.name!r}, model={self.judge.model!r}, "
            f"base_url={display_url(self.base_url)!r}, key_from=${self.judge.api_key_env})"
        )

    # -- public API ------------------------------------------------------------------------------------------

    def run(
        self,
        requests: Sequence[ChatRequest],
        *,
        desc: str = "LLM",
        show_progress: bool = True,
        on_result: Callable[[ChatResult], None] | None = None,
    ) -> list[ChatResult]:
        """Complete all requests (at most ``judge.concurrency`` in flight); results in request order.

        ``on_result`` is called once per result as it finishes, one at a time, so a caller can append
        each to a log and resume after a kill.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("ChatClient.run() cannot be called from a running event loop; await acomplete()")
        return asyncio.run(self._run_all(list(requests), desc, show_progress, on_result))

    async def acomplete(self, request: ChatRequest) -> ChatResult:
        _, client, semaphore = self._state()
        async with semaphore:
            return await self._complete(client, request)

    def cache_key(self, request: ChatRequest) -> str:
        return cache_key(self.judge, request)

    async def aclose(self) -> None:
        """Close the HTTP connections opened by ``acomplete`` in the running loop (``run`` does this itself)."""
        await self._close_loop_client()

    # -- internals -------------------------------------------------------------------------------------------

    def _state(self) -> tuple[asyncio.AbstractEventLoop, openai.AsyncOpenAI, asyncio.Semaphore]:
        """The HTTP client and semaphore of the running event loop (``run`` starts a new loop each call)."""
        loop = asyncio.get_running_loop()
        if self._loop_state is None or self._loop_state[0] is not loop:
            # Basic auth as a header, not in the URL: the HTTP library logs and reports request URLs.
            headers = {"Authorization": self._credentials.header()} if self._credentials else None
            client = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=self.base_url,
                max_retries=0,
                timeout=self.judge.effective_timeout_s,
                default_headers=headers,
            )
            self._loop_state = (loop, client, asyncio.Semaphore(self.judge.concurrency))
        return self._loop_state

    async def _close_loop_client(self) -> None:
        state, self._loop_state = self._loop_state, None
        if state is not None:
            try:
                await state[1].close()
            except Exception:  # closing is best effort; the loop is ending anyway
                log.debug("closing the HTTP client failed", exc_info=False)

    async def _run_all(
        self,
        requests: list[ChatRequest],
        desc: str,
        show_progress: bool,
        on_result: Callable[[ChatResult], None] | None,
    ) -> list[ChatResult]:
        results: list[ChatResult | None] = [None] * len(requests)

        async def one(index: int, request: ChatRequest) -> tuple[int, ChatResult]:
            return index, await self.acomplete(request)

        bar = tqdm(total=len(requests), desc=desc, unit="req", disable=not show_progress, dynamic_ncols=True)
        tasks = [asyncio.create_task(one(i, r)) for i, r in enumerate(requests)]
        try:
            for finished in asyncio.as_completed(tasks):
                index, result = await finished
                results[index] = result
                if on_result is not None:
                    on_result(result)
                bar.update(1)
                bar.set_postfix(cached=self.usage.cached, failed=self.usage.failures, refresh=False)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            bar.close()
            await self._close_loop_client()
        return [r for r in results if r is not None]

    def _redact(self, text: str) -> str:
        return self._redactor(text)

    def _result(
        self,
        request: ChatRequest,
        *,
        ok: bool,
        text: str | None,
        value: object = None,
        error: str | None = None,
        attempts: int,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cached: bool = False,
        malformed: list[MalformedReply] | None = None,
    ) -> ChatResult:
        self.usage.items += 1
        if not ok:
            self.usage.failures += 1
            log.info("judge %s: %s failed: %s", self.judge.name, request.key, error)
        return ChatResult(
            key=request.key,
            ok=ok,
            text=text,
            value=value,
            error=error,
            attempts=attempts,
            cached=cached,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            malformed=malformed or [],
        )

    def _count_transport(self, error: str | None) -> None:
        """Circuit breaker: a server that fails every request stops the run instead of failing each item slowly."""
        if error is None:
            self._failures_in_a_row = 0
            return
        self._failures_in_a_row += 1
        limit = self.judge.max_failures_in_a_row
        if limit and self._failures_in_a_row >= limit and self._stopped is None:
            self._stopped = (
                f"judge '{self.judge.name}' at {display_url(self.base_url)}: {self._failures_in_a_row} requests in a "
                f"row failed after their retries (last: {error}); stopped. Finished work is saved: fix the server, "
                f"model or key and run again to resume (max_failures_in_a_row in the judges file sets the limit)"
            )
        if self._stopped is not None:
            raise LLMError(self._stopped)

    async def _complete(self, client: openai.AsyncOpenAI, request: ChatRequest) -> ChatResult:
        if self._stopped is not None:
            raise LLMError(self._stopped)
        parse = request.read
        key = self.cache_key(request)
        cached = self._cached_result(request, key, parse)
        if cached is not None:
            return cached
        tally = _Tally()
        sent_params = generation_params(self.judge, request)
        current = request
        while True:
            outcome = await self._send(client, current)
            self._count_transport(outcome.error)
            tally.add(outcome)
            if outcome.error is not None:
                return self._tallied_result(request, tally, ok=False, text=None, error=outcome.error)
            tally.parse_attempts += 1
            text = outcome.text
            try:
                if outcome.malformed is not None:
                    raise ValueError(outcome.malformed)
                value = parse(text)
            except PARSE_ERRORS as err:
                reason = self._keep_malformed(request, tally, text, err)
                if tally.parse_attempts > self.judge.parse_retries:
                    error = f"unparseable after {tally.parse_attempts} attempts: {reason}"
                    return self._tallied_result(request, tally, ok=False, text=text, error=error)
                current = _reask(request, tally.parse_attempts, text, reason, sent_params)
                continue
            self._store(key, text, tally)
            return self._tallied_result(request, tally, ok=True, text=text, value=value)

    def _cached_result(self, request: ChatRequest, key: str, parse: Callable[[str], object]) -> ChatResult | None:
        """The cache's reply when it still parses (one that no longer does is dropped and asked again)."""
        if self.cache is None:
            return None
        record = self.cache.get(key)
        if record is None:
            return None
        try:
            value = parse(record["text"])
        except PARSE_ERRORS:
            log.debug("judge %s: cached reply for %s no longer parses; asking again", self.judge.name, request.key)
            self.cache.delete(key)
            return None
        self.usage.cached += 1
        return self._result(request, ok=True, text=record["text"], value=value, attempts=0, cached=True)

    def _keep_malformed(self, request: ChatRequest, tally: _Tally, text: str | None, err: Exception) -> str:
        """Record an unparseable reply (redacted) in the tally and the log; returns the redacted reason."""
        reason = self._redact(short_reason(err))
        tally.malformed.append(
            MalformedReply(tally.parse_attempts, reason, None if text is None else self._redact(text))
        )
        log.info(
            "judge %s: reply %d for %s unparseable (%s): %r",
            self.judge.name,
            tally.parse_attempts,
            request.key,
            reason,
            tally.malformed[-1].text,
        )
        return reason

    def _store(self, key: str, text: str | None, tally: _Tally) -> None:
        if self.cache is not None:
            self.cache.put(
                key,
                {
                    "text": text,
                    "model": self.judge.model,
                    "prompt_tokens": tally.prompt_tokens,
                    "completion_tokens": tally.completion_tokens,
                    "created": time.time(),
                },
            )

    def _tallied_result(
        self,
        request: ChatRequest,
        tally: _Tally,
        *,
        ok: bool,
        text: str | None,
        value: object = None,
        error: str | None = None,
    ) -> ChatResult:
        return self._result(
            request,
            ok=ok,
            text=text,
            value=value,
            error=error,
            attempts=tally.attempts,
            prompt_tokens=tally.prompt_tokens,
            completion_tokens=tally.completion_tokens,
            malformed=tally.malformed,
        )

    def _request_kwargs(self, request: ChatRequest, use_json: bool) -> dict[str, Any]:
        params = generation_params(self.judge, request)
        kwargs: dict[str, Any] = {
            "model": self.judge.model,
            "messages": request.messages,
            "temperature": params.pop("temperature"),
            "max_tokens": params.pop("max_tokens"),
            "timeout": self.judge.effective_timeout_s,
        }
        if use_json:
            kwargs["response_format"] = {"type": "json_object"}
        if params:
            kwargs["extra_body"] = params
        return kwargs

    def _timeout_backoff(self, retry_index: int) -> float:
        """The wait before re-sending a request abandoned by a timeout: at least the timeout itself (the server
        has been computing the abandoned request that long and likely still is), doubling per retry, capped
        at the larger of ``backoff_max_s`` and the timeout; always longer than the error backoff's ceiling
        for the same retry."""
        timeout = self.judge.effective_timeout_s
        error_ceiling = min(self.backoff_max_s, self.backoff_base_s * (2**retry_index))
        wait = max(min(timeout * (2**retry_index), max(self.backoff_max_s, timeout)), error_ceiling)
        return wait * random.uniform(1.0, 1.25)

    def _backoff(self, retry_index: int, server_hint: float | None) -> float:
        if server_hint is not None:
            return min(server_hint, self.retry_after_max_s) + random.uniform(0, min(0.25, self.backoff_base_s))
        ceiling = min(self.backoff_max_s, self.backoff_base_s * (2**retry_index))
        return ceiling * random.uniform(0.5, 1.0)

    async def _send(self, client: openai.AsyncOpenAI, request: ChatRequest) -> _Outcome:
        """One logical request: HTTP attempts until a 200, a non-retryable error, or retries run out."""
        use_json = uses_json_mode(self.judge, request) and not (
            self.judge.json_mode is None and self._json_mode_refused
        )
        json_fallback_used = False
        retries = 0
        sent = 0
        while True:
            sent += 1
            self.usage.requests += 1
            hint: float | None = None
            try:
                response = await asyncio.wait_for(
                    client.chat.completions.create(**self._request_kwargs(request, use_json)),
                    timeout=self.judge.effective_timeout_s,
                )
            except (asyncio.TimeoutError, openai.APITimeoutError):
                reason, retryable = "timeout", True
            except openai.APIStatusError as err:
                status = err.status_code
                if status == 400 and use_json and self.judge.json_mode is None and not json_fallback_used:
                    if not self._json_mode_refused:
                        log.warning(
                            "judge %s: server %s refused response_format (HTTP 400); JSON mode is off "
                            "for it from now on",
                            self.judge.name,
                            display_url(self.base_url),
                        )
                    self._json_mode_refused = True
                    use_json, json_fallback_used = False, True
                    continue
                retryable = status in RETRYABLE_STATUS or status >= 500
                reason = f"HTTP {status}"
                hint = retry_after_seconds(getattr(err.response, "headers", None))
                if not retryable:
                    detail = self._redact(_server_message(err))
                    return _Outcome(attempts=sent, error=f"{reason}: {detail}" if detail else reason)
            except openai.APIConnectionError:
                reason, retryable = "connection error", True
            except openai.OpenAIError as err:
                return _Outcome(attempts=sent, error=self._redact(f"API error: {short_reason(err)}"))
            except ValueError:  # a 200 whose body is not JSON (a proxy's error page, a broken server)
                return _Outcome(attempts=sent, malformed="response body is not JSON")
            else:
                outcome = _read_completion(response, sent)
                if outcome.text is not None:  # a reply is logged and cached: no secret echoed by the server
                    outcome.text = self._redactor.known(outcome.text)
                self.usage.prompt_tokens += outcome.prompt_tokens
                self.usage.completion_tokens += outcome.completion_tokens
                return outcome
            if retries >= self.judge.max_retries:
                return _Outcome(attempts=sent, error=f"{reason} after {sent} attempts")
            delay = self._timeout_backoff(retries) if reason == "timeout" else self._backoff(retries, hint)
            retries += 1
            log.debug(
                "judge %s: %s for %s; retry %d/%d in %.2fs",
                self.judge.name,
                reason,
                request.key,
                retries,
                self.judge.max_retries,
                delay,
            )
            await asyncio.sleep(delay)


def _reask(
    request: ChatRequest, parse_attempts: int, text: str | None, reason: str, sent_params: dict[str, Any]
) -> ChatRequest:
    """The request that asks again after an unparseable reply (mtrbench.llm.reask)."""
    seed = sent_params.get("seed")
    return reask_request(
        request,
        parse_attempts,
        text,
        reason,
        sent_params.get("temperature"),
        seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
    )


def _read_completion(response: object, sent: int) -> _Outcome:
    """An OpenAI ``ChatCompletion``, read defensively: a compatible server may leave fields out."""
    usage = getattr(response, "usage", None)
    prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
    choices = getattr(response, "choices", None)
    if not choices:
        return _Outcome(
            attempts=sent,
            text=None,
            malformed="reply has no choices",
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    if not isinstance(content, str):
        return _Outcome(
            attempts=sent,
            text=None,
            malformed="reply has no message content",
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )
    return _Outcome(attempts=sent, text=content, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def _server_message(err: openai.APIStatusError) -> str:
    body = getattr(err, "body", None)
    message = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
    if not message:
        message = getattr(err, "message", "") or ""
    return " ".join(str(message).split())[:200]
