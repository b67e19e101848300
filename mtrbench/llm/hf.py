"""A local Hugging Face chat backend: a transformers causal LM run in-process, no server.

Selected by a base URL ``hf://MODEL_OR_PATH`` (an HF id or a local folder). It answers the same
``ChatRequest``s with the same ``ChatResult``s, usage counts and response cache as ``ChatClient``, so
anything that takes a client (generate, the rewriter, judges) runs on it unchanged.

Prompts are rendered with the tokenizer's own chat template, batched with left padding (a decoder
continues from the last position, so padding must come first) and decoded greedily unless the temperature
is above 0 (then sampled, seeded by the request's ``seed`` when it has one: the same seed and batch give the
same replies). A reply that does not parse is asked again as ``ChatClient`` asks it, up to ``parse_retries``
times, never with the identical request (``mtrbench.llm.reask``: a repair turn quoting the reply, then another
seed and, at temperature 0, temperature 0.7). The re-asks of a run's failures are batched too, one round per
re-ask number. ``ChatResult.attempts`` counts generations, ``malformed`` lists every reply that did not parse,
and a reply that parses after a re-ask is cached under the original request.

``judge.timeout_s`` (``--timeout``; default ``HF_TIMEOUT_S``, 900 s) bounds each ``generate`` call, that is one batch: the rows of a batch run
together, as concurrent HTTP requests each run under their own timeout. When it runs out, rows that already
ended (a stop token or the token limit) keep their replies; every other row is a failure ("timeout: ...") and
is not generated again (a longer try would most likely run out too). The prompt's prefill is not interrupted:
the bound is checked after each new token.

``hf://smollm2`` (a packaged model) and ``hf://PATH/file.gguf`` are resolved by ``llm.packaged``. A model is
loaded once per process: clients of the same path, dtype and device (a rewriter and a generator, a generator
and its judge, two judges of an ensemble) share its weights, and one ``generate`` runs on it at a time. Each
item is handed on (and counted on the progress bar, with tokens per second) the moment it is finished (its
reply parsed, or it failed for good), not when the whole batch is.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mtrbench.infra.errors import ModelError, UserInputError
from mtrbench.infra.reporting import progress_bar
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.packaged import resolve_chat_model
from mtrbench.llm.reask import reask_request
from mtrbench.llm.redact import Redactor
from mtrbench.llm.types import (
    PARSE_ERRORS,
    ChatRequest,
    ChatResult,
    ChatRunner,
    MalformedReply,
    Usage,
    cache_key,
    generation_params,
    short_reason,
)

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)

HF_SCHEME = "hf://"


def is_hf_url(url: str | None) -> bool:
    return bool(url) and str(url).startswith(HF_SCHEME)


def hf_model_path(url: str) -> str:
    path = url[len(HF_SCHEME) :].strip()
    if not path:
        raise UserInputError(
            f"base URL {url!r}: name the model after hf://, e.g. hf://Qwen/Qwen2.5-0.5B-Instruct "
            "or hf:///path/to/folder"
        )
    return path


class HFChatClient:
    """``run`` like ``ChatClient.run``; ``judge.concurrency`` is the generation batch size."""

    def __init__(
        self,
        judge: JudgeConfig,
        cache: ResponseCache | None = None,
        *,
        device: str = "auto",
        model: PreTrainedModel | None = None,
        tokenizer: PreTrainedTokenizerBase | None = None,
    ) -> None:
        self.judge = judge
        self.cache = cache
        self.base_url = judge.base_url or ""
        self.usage = Usage()
        self._path = hf_model_path(self.base_url)
        self._device = device
        self._model = model
        self._tokenizer = tokenizer
        self._generate_lock: threading.Lock | None = None
        self._redactor = Redactor()  # no secrets of its own: credential-looking strings in malformed replies

    def __repr__(self) -> str:
        return f"HFChatClient(judge={self.judge.name!r}, model={self._path!r})"

    def cache_key(self, request: ChatRequest) -> str:
        return cache_key(self.judge, request)

    # -- model ---------------------------------------------------------------------------------------------

    def _load(self) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
        if self._model is None or self._tokenizer is None:
            loaded = load_chat_model(self._path, self._device)
            self._model, self._tokenizer, self._generate_lock = loaded.model, loaded.tokenizer, loaded.generate_lock
        tokenizer = self._tokenizer
        if not getattr(tokenizer, "chat_template", None):
            raise ModelError(f"hf://{self._path}: the tokenizer has no chat template; use an instruct/chat model")
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        return self._model, tokenizer

    def generate_ids(
        self, requests: Sequence[ChatRequest], on_reply: Callable[[int, list[int]], None] | None = None
    ) -> GeneratedIds:
        """New token ids for one batch of requests (left-padded, one ``generate`` call, bounded by
        ``judge.timeout_s``), with the first request's sampling parameters.

        ``on_reply(position, ids)`` is called once per request that got a reply, as soon as its row ends (a stop
        token), or after ``generate`` for rows cut at the token limit. Rows still running when the time ran out
        get no call; their positions are in the result's ``timed_out`` (their ids are the tokens made so far).
        """
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList

        model, tokenizer = self._load()
        prompts = [
            tokenizer.apply_chat_template(r.messages, add_generation_prompt=True, tokenize=False) for r in requests
        ]
        batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        batch = {k: batch[k].to(model.device) for k in ("input_ids", "attention_mask")}
        params = generation_params(self.judge, requests[0])
        temperature = float(params.get("temperature") or 0.0)
        sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
        seed = params.get("seed")
        seed = seed if temperature > 0 and isinstance(seed, int) and not isinstance(seed, bool) else None
        max_new_tokens = int(params.get("max_tokens") or 256)
        width = batch["input_ids"].shape[1]
        model_eos = model.generation_config.eos_token_id
        model_eos = model_eos if isinstance(model_eos, list) else [model_eos]
        stops = {tokenizer.eos_token_id, tokenizer.pad_token_id, *model_eos} - {None}
        rows = _Rows(width, stops, on_reply)
        timeout_s = float(self.judge.effective_timeout_s)

        class _WatchRows(StoppingCriteria):  # reports rows that just ended; stops all rows once time runs out
            deadline = float("inf")

            def __call__(
                self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs: object
            ) -> torch.BoolTensor:
                rows.step(input_ids)
                if time.monotonic() > self.deadline:
                    rows.out_of_time = True
                return torch.full((input_ids.shape[0],), rows.out_of_time, dtype=torch.bool, device=input_ids.device)

        watch = _WatchRows()
        lock = self._generate_lock if self._generate_lock is not None else threading.Lock()
        with lock, torch.no_grad(), _seeded(torch, seed, model.device):
            watch.deadline = time.monotonic() + timeout_s  # waiting for another client's batch does not count
            out = model.generate(
                **batch,
                max_new_tokens=max_new_tokens,
                pad_token_id=tokenizer.pad_token_id,
                stopping_criteria=StoppingCriteriaList([watch]),
                **sampling,
            )
        return rows.finish(out, max_new_tokens)

    # -- the client interface ------------------------------------------------------------------------------

    def run(
        self,
        requests: Sequence[ChatRequest],
        *,
        desc: str = "LLM",
        show_progress: bool = True,
        on_result: Callable[[ChatResult], None] | None = None,
    ) -> list[ChatResult]:
        """Complete all requests in batches of ``judge.concurrency``; results in request order.

        Requests that share sampling parameters share batches, similar lengths together (less padding). Replies
        that do not parse are asked again, a round of batches per re-ask number. ``on_result`` is called once
        per item, when it is finished."""
        results: dict[int, ChatResult] = {}
        todo: list[_Item] = []
        for index, request in enumerate(requests):
            hit = self._from_cache(request)
            if hit is not None:
                results[index] = hit
                if on_result is not None:
                    on_result(hit)
            else:
                todo.append(_Item(index, request, request))
        bar = progress_bar(
            total=len(requests),
            initial=len(results),
            desc=desc,
            unit="req",
            show_progress=show_progress,
            dynamic_ncols=True,
        )
        started = time.monotonic()
        generated = 0

        def finished(item: _Item, result: ChatResult) -> None:
            results[item.index] = result
            if on_result is not None:
                on_result(result)
            bar.update(1)
            elapsed = time.monotonic() - started
            bar.set_postfix(
                tok_s=f"{generated / elapsed:.1f}" if elapsed > 0 else "-", failed=self.usage.failures, refresh=False
            )

        try:
            if todo:
                _, tokenizer = self._load()
            while todo:  # round 0: the requests; round n: re-ask n of those whose reply did not parse
                reask: list[_Item] = []
                for chunk in self._batches(todo):
                    reported: set[int] = set()

                    def on_reply(
                        position: int,
                        reply_ids: list[int],
                        chunk: list[_Item] = chunk,
                        reported: set[int] = reported,
                        reask: list[_Item] = reask,
                    ) -> None:
                        nonlocal generated
                        reported.add(position)
                        generated += len(reply_ids)
                        item = chunk[position]
                        text = tokenizer.decode(reply_ids, skip_special_tokens=True).strip()
                        result = self._answered(item, text, len(reply_ids))
                        if result is None:
                            reask.append(item)
                        else:
                            finished(item, result)

                    ids = self.generate_ids([item.current for item in chunk], on_reply)
                    for position, item in enumerate(chunk):
                        if position not in reported:  # still running when the time ran out
                            generated += len(ids[position])
                            finished(item, self._timed_out(item, len(ids[position])))
                todo = reask
        finally:
            bar.close()
        return [results[i] for i in range(len(requests))]

    def _batches(self, items: list[_Item]) -> list[list[_Item]]:
        """Batches of at most ``concurrency`` items of equal sampling parameters, similar lengths together."""
        groups: dict[str, list[_Item]] = {}
        for item in items:
            params = generation_params(self.judge, item.current)
            groups.setdefault(json.dumps(params, sort_keys=True, default=str), []).append(item)
        size = max(1, self.judge.concurrency)
        batches: list[list[_Item]] = []
        for group in groups.values():
            group.sort(key=lambda item: sum(len(m.get("content") or "") for m in item.current.messages))
            batches += [group[start : start + size] for start in range(0, len(group), size)]
        return batches

    def _from_cache(self, request: ChatRequest) -> ChatResult | None:
        if self.cache is None:
            return None
        key = self.cache_key(request)
        record = self.cache.get(key)
        if record is None:
            return None
        parse = request.read
        try:
            value = parse(record["text"])
        except PARSE_ERRORS:
            log.debug("judge %s: cached reply for %s no longer parses; asking again", self.judge.name, request.key)
            self.cache.delete(key)
            return None
        self.usage.cached += 1
        self.usage.items += 1
        return ChatResult(
            key=request.key,
            ok=True,
            text=record["text"],
            value=value,
            error=None,
            attempts=0,
            cached=True,
            prompt_tokens=0,
            completion_tokens=0,
        )

    def _generated(self, item: _Item, n_tokens: int) -> None:
        self.usage.requests += 1
        self.usage.completion_tokens += n_tokens
        item.generations += 1
        item.completion_tokens += n_tokens

    def _result(
        self, item: _Item, *, ok: bool, text: str | None, value: object = None, error: str | None = None
    ) -> ChatResult:
        self.usage.items += 1
        if not ok:
            self.usage.failures += 1
            log.info("judge %s: %s failed: %s", self.judge.name, item.request.key, error)
        return ChatResult(
            key=item.request.key,
            ok=ok,
            text=text,
            value=value,
            error=error,
            attempts=item.generations,
            cached=False,
            prompt_tokens=0,
            completion_tokens=item.completion_tokens,
            malformed=list(item.malformed),
        )

    def _answered(self, item: _Item, text: str, n_tokens: int) -> ChatResult | None:
        """The item's result after a reply; None when the reply did not parse and it is to be asked again."""
        self._generated(item, n_tokens)
        request = item.request
        parse = request.parse or (lambda reply: reply)
        try:
            value = parse(text)
        except PARSE_ERRORS as err:
            attempt = len(item.malformed) + 1
            reason = self._redactor(short_reason(err))
            item.malformed.append(MalformedReply(attempt, reason, self._redactor(text)))
            log.info(
                "judge %s: reply %d for %s unparseable (%s): %r",
                self.judge.name,
                attempt,
                request.key,
                reason,
                item.malformed[-1].text,
            )
            if attempt > self.judge.parse_retries:
                return self._result(item, ok=False, text=text, error=f"unparseable after {attempt} attempts: {reason}")
            params = generation_params(self.judge, request)
            seed = params.get("seed")
            item.current = reask_request(
                request,
                attempt,
                text,
                reason,
                params.get("temperature"),
                seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
            )
            return None
        if self.cache is not None:
            self.cache.put(
                self.cache_key(request),
                {
                    "text": text,
                    "model": self.judge.model,
                    "completion_tokens": item.completion_tokens,
                    "created": time.time(),
                },
            )
        return self._result(item, ok=True, text=text, value=value)

    def _timed_out(self, item: _Item, n_tokens: int) -> ChatResult:
        self._generated(item, n_tokens)
        return self._result(
            item,
            ok=False,
            text=None,
            error=(
                f"timeout: generation passed --timeout {self.judge.effective_timeout_s:g} s (in-process, not retried); "
                "raise --timeout (timeout_s in a judges file)"
            ),
        )


@dataclass
class _Item:
    """One request of ``run`` not served from the cache, through its re-asks."""

    index: int  # position in the caller's list
    request: ChatRequest  # as the caller made it: parsed against, cached under
    current: ChatRequest  # what is generated next: the request, or its latest re-ask
    generations: int = 0
    completion_tokens: int = 0
    malformed: list[MalformedReply] = field(default_factory=list)


@contextmanager
def _seeded(torch: object, seed: int | None, device: object) -> Iterator[None]:
    """Sampling seeded by ``seed`` (None: the process's random state as it is); the global state is restored."""
    if seed is None:
        yield
        return
    cuda = getattr(device, "type", "cpu") == "cuda"
    with torch.random.fork_rng(devices=[device.index or 0] if cuda else []):  # type: ignore[attr-defined]
        torch.manual_seed(seed)  # type: ignore[attr-defined]
        yield


class GeneratedIds(list):
    """``generate_ids``' result: each row's new token ids, and the rows the timeout cut short."""

    def __init__(self, rows: list[list[int]], timed_out: set[int]) -> None:
        super().__init__(rows)
        self.timed_out = timed_out


class _Rows:
    """Which rows of a batch have ended, seen step by step while ``generate`` runs."""

    def __init__(self, width: int, stops: set[int], on_reply: Callable[[int, list[int]], None] | None) -> None:
        self.width = width  # prompt columns: new tokens start here
        self.stops = stops
        self.on_reply = on_reply
        self.replies: dict[int, list[int]] = {}
        self.out_of_time = False  # set by the watcher when the batch's time ran out

    def step(self, input_ids: torch.LongTensor) -> None:
        if input_ids.shape[1] <= self.width:
            return
        last = input_ids[:, -1].tolist()
        for row, token in enumerate(last):
            if row not in self.replies and token in self.stops:
                self._done(row, input_ids[row, self.width : -1].tolist())

    def finish(self, out: torch.LongTensor, max_new_tokens: int | None = None) -> GeneratedIds:
        """Every row's ids; rows not reported yet are reported now (cut at the token limit), except, when the time
        ran out, those that had neither ended nor reached ``max_new_tokens``: they are left unreported, as timed
        out."""
        timed_out: set[int] = set()
        ids_by_row: dict[int, list[int]] = {}
        for row, ids in enumerate(out[:, self.width :].tolist()):
            if row in self.replies:
                continue
            end = next((i for i, t in enumerate(ids) if t in self.stops), None)
            ids = ids if end is None else ids[:end]
            if self.out_of_time and end is None and (max_new_tokens is None or len(ids) < max_new_tokens):
                timed_out.add(row)
                ids_by_row[row] = ids
            else:
                self._done(row, ids)
        return GeneratedIds(
            [ids_by_row[row] if row in timed_out else self.replies[row] for row in range(out.shape[0])], timed_out
        )

    def _done(self, row: int, ids: list[int]) -> None:
        self.replies[row] = ids
        if self.on_reply is not None:
            self.on_reply(row, ids)


@dataclass
class LoadedChatModel:
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    generate_lock: threading.Lock = field(default_factory=threading.Lock)  # one generate at a time on the weights


_LOADED: dict[tuple[str, str, str], LoadedChatModel] = {}
_LOADING = threading.Lock()


def load_chat_model(path: str, device: str = "auto") -> LoadedChatModel:
    """The causal LM and tokenizer named after ``hf://``, loaded once per process per (path, dtype, device)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    with _LOADING:
        location = resolve_chat_model(path)
        key = (location, str(dtype), device)
        if key not in _LOADED:
            try:
                tokenizer = AutoTokenizer.from_pretrained(location)
                model = AutoModelForCausalLM.from_pretrained(location, dtype=dtype)
            except (OSError, ValueError) as err:
                raise ModelError(f"hf://{path}: cannot load a causal LM and its tokenizer ({err})") from None
            _LOADED[key] = LoadedChatModel(model.to(device).eval(), tokenizer)
        return _LOADED[key]


def forget_loaded_models() -> None:
    """Drop every model this process loaded (they are kept for its lifetime otherwise)."""
    with _LOADING:
        _LOADED.clear()


def make_client(judge: JudgeConfig, cache: ResponseCache | None = None) -> ChatRunner:
    """The client for a judge: the in-process HF backend for ``hf://`` base URLs, else the HTTP client."""
    if is_hf_url(judge.base_url):
        return HFChatClient(judge, cache)
    from mtrbench.llm.client import ChatClient  # deferred: openai takes seconds to import

    return ChatClient(judge, cache)
