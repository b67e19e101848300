"""A local Hugging Face chat backend: a transformers causal LM run in-process, no server.

Selected by a base URL ``hf://MODEL_OR_PATH`` (an HF id or a local folder). It answers the same
``ChatRequest``s with the same ``ChatResult``s, usage counts and response cache as ``ChatClient``, so
anything that takes a client (generate, the rewriter, judges) runs on it unchanged.

Prompts are rendered with the tokenizer's own chat template, batched with left padding (a decoder
continues from the last position, so padding must come first) and decoded greedily unless the judge's
temperature is above 0. Greedy decoding is deterministic, so a reply that does not parse is not asked
again: it is a failure at once (one attempt).

``hf://smollm2`` (a packaged model) and ``hf://PATH/file.gguf`` are resolved by ``llm.packaged``. A model is
loaded once per process: clients of the same path, dtype and device (a rewriter and a generator, a generator
and its judge, two judges of an ensemble) share its weights, and one ``generate`` runs on it at a time. Each
reply is handed on (and counted on the progress bar, with tokens per second) the moment its row of the
batch ends, not when the whole batch does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tqdm.auto import tqdm

from mtrbench.infra.errors import ModelError, UserInputError
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.client import (PARSE_ERRORS, ChatRequest, ChatResult, ChatRunner, Usage, cache_key,
                                 generation_params)
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.reask import MalformedReply

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)

HF_SCHEME = "hf://"


def is_hf_url(url: str | None) -> bool:
    return bool(url) and str(url).startswith(HF_SCHEME)


def hf_model_path(url: str) -> str:
    path = url[len(HF_SCHEME):].strip()
    if not path:
        raise UserInputError(f"base URL {url!r}: name the model after hf://, e.g. hf://Qwen/Qwen2.5-0.5B-Instruct "
                            "or hf:///path/to/folder")
    return path


class HFChatClient:
    """``run`` like ``ChatClient.run``; ``judge.concurrency`` is the generation batch size."""

    def __init__(self, judge: JudgeConfig, cache: ResponseCache | None = None, *, device: str = "auto",
                 model: PreTrainedModel | None = None, tokenizer: PreTrainedTokenizerBase | None = None) -> None:
        self.judge = judge
        self.cache = cache
        self.base_url = judge.base_url or ""
        self.usage = Usage()
        self._path = hf_model_path(self.base_url)
        self._device = device
        self._model = model
        self._tokenizer = tokenizer
        self._generate_lock: threading.Lock | None = None

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

    def generate_ids(self, requests: Sequence[ChatRequest],
                     on_reply: Callable[[int, list[int]], None] | None = None) -> list[list[int]]:
        """New token ids for one batch of requests (left-padded, one ``generate`` call).

        ``on_reply(position, ids)`` is called once per request, as soon as its row ends (a stop token), or
        after ``generate`` for rows cut at the token limit.
        """
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList

        model, tokenizer = self._load()
        prompts = [tokenizer.apply_chat_template(r.messages, add_generation_prompt=True, tokenize=False)
                   for r in requests]
        batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        batch = {k: batch[k].to(model.device) for k in ("input_ids", "attention_mask")}
        params = generation_params(self.judge, requests[0])
        temperature = float(params.get("temperature") or 0.0)
        sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
        width = batch["input_ids"].shape[1]
        model_eos = model.generation_config.eos_token_id
        model_eos = model_eos if isinstance(model_eos, list) else [model_eos]
        stops = {tokenizer.eos_token_id, tokenizer.pad_token_id, *model_eos} - {None}
        rows = _Rows(width, stops, on_reply)

        class _WatchRows(StoppingCriteria):  # never stops anything: reports rows that just ended
            def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor,
                         **kwargs: object) -> torch.BoolTensor:
                rows.step(input_ids)
                return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

        lock = self._generate_lock if self._generate_lock is not None else threading.Lock()
        with lock, torch.no_grad():
            out = model.generate(**batch, max_new_tokens=int(params.get("max_tokens") or 256),
                                 pad_token_id=tokenizer.pad_token_id,
                                 stopping_criteria=StoppingCriteriaList([_WatchRows()]), **sampling)
        return rows.finish(out)

    # -- the client interface ------------------------------------------------------------------------------

    def run(self, requests: Sequence[ChatRequest], *, desc: str = "LLM", show_progress: bool = True,
            on_result: Callable[[ChatResult], None] | None = None) -> list[ChatResult]:
        results: dict[int, ChatResult] = {}
        todo: list[int] = []
        for index, request in enumerate(requests):
            hit = self._from_cache(request)
            if hit is not None:
                results[index] = hit
                if on_result is not None:
                    on_result(hit)
            else:
                todo.append(index)
        bar = tqdm(total=len(requests), initial=len(results), desc=desc, unit="req", disable=not show_progress,
                   dynamic_ncols=True)
        size = max(1, self.judge.concurrency)
        started = time.monotonic()
        generated = 0
        try:
            if todo:
                _, tokenizer = self._load()
                # similar lengths share a batch: less padding
                todo.sort(key=lambda i: sum(len(m.get("content") or "") for m in requests[i].messages))
            for start in range(0, len(todo), size):
                chunk = todo[start:start + size]
                batch_requests = [requests[i] for i in chunk]

                def on_reply(position: int, reply_ids: list[int], chunk: list[int] = chunk,
                             batch_requests: list[ChatRequest] = batch_requests) -> None:
                    nonlocal generated
                    text = tokenizer.decode(reply_ids, skip_special_tokens=True).strip()
                    result = self._finish(batch_requests[position], text, len(reply_ids))
                    results[chunk[position]] = result
                    if on_result is not None:
                        on_result(result)
                    generated += len(reply_ids)
                    bar.update(1)
                    elapsed = time.monotonic() - started
                    bar.set_postfix(tok_s=f"{generated / elapsed:.1f}" if elapsed > 0 else "-",
                                    failed=self.usage.failures, refresh=False)

                self.generate_ids(batch_requests, on_reply)
        finally:
            bar.close()
        return [results[i] for i in range(len(requests))]

    def _from_cache(self, request: ChatRequest) -> ChatResult | None:
        if self.cache is None:
            return None
        record = self.cache.get(self.cache_key(request))
        if record is None:
            return None
        parse = request.parse or (lambda text: text)
        try:
            value = parse(record["text"])
        except PARSE_ERRORS:
            return None
        self.usage.cached += 1
        self.usage.items += 1
        return ChatResult(key=request.key, ok=True, text=record["text"], value=value, error=None, attempts=0,
                          cached=True, prompt_tokens=0, completion_tokens=0)

    def _finish(self, request: ChatRequest, text: str, n_tokens: int) -> ChatResult:
        self.usage.requests += 1
        self.usage.items += 1
        self.usage.completion_tokens += n_tokens
        parse = request.parse or (lambda reply: reply)
        try:
            value = parse(text)
        except PARSE_ERRORS as err:
            self.usage.failures += 1
            reason = " ".join(str(err).split())[:200] or type(err).__name__
            return ChatResult(key=request.key, ok=False, text=text, value=None,
                              error=f"unparseable (greedy decoding, not retried): {reason}", attempts=1,
                              cached=False, prompt_tokens=0, completion_tokens=n_tokens,
                              malformed=[MalformedReply(1, reason, text)])
        if self.cache is not None:
            self.cache.put(self.cache_key(request), {"text": text, "model": self.judge.model,
                                                     "completion_tokens": n_tokens, "created": time.time()})
        return ChatResult(key=request.key, ok=True, text=text, value=value, error=None, attempts=1, cached=False,
                          prompt_tokens=0, completion_tokens=n_tokens)


class _Rows:
    """Which rows of a batch have ended, seen step by step while ``generate`` runs."""

    def __init__(self, width: int, stops: set[int], on_reply: Callable[[int, list[int]], None] | None) -> None:
        self.width = width  # prompt columns: new tokens start here
        self.stops = stops
        self.on_reply = on_reply
        self.replies: dict[int, list[int]] = {}

    def step(self, input_ids: torch.LongTensor) -> None:
        if input_ids.shape[1] <= self.width:
            return
        last = input_ids[:, -1].tolist()
        for row, token in enumerate(last):
            if row not in self.replies and token in self.stops:
                self._done(row, input_ids[row, self.width:-1].tolist())

    def finish(self, out: torch.LongTensor) -> list[list[int]]:
        for row, ids in enumerate(out[:, self.width:].tolist()):
            if row not in self.replies:
                self._done(row, ids[:next((i for i, t in enumerate(ids) if t in self.stops), len(ids))])
        return [self.replies[row] for row in range(out.shape[0])]

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

    from mtrbench.llm.packaged import resolve_chat_model

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
    from mtrbench.llm.client import ChatClient

    return ChatClient(judge, cache)
