"""A local Hugging Face chat backend: a transformers causal LM run in-process, no server.

Selected by a base URL ``hf://MODEL_OR_PATH`` (an HF id or a local folder). It answers the same
``ChatRequest``s with the same ``ChatResult``s, usage counts and response cache as ``ChatClient``, so
anything that takes a client (generate, the rewriter, judges) runs on it unchanged.

Prompts are rendered with the tokenizer's own chat template, batched with left padding (a decoder
continues from the last position, so padding must come first) and decoded greedily unless the judge's
temperature is above 0. Greedy decoding is deterministic, so a reply that does not parse is not asked
again: it is a failure at once (one attempt).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tqdm.auto import tqdm

from mtrbench.infra.errors import ModelError, UserInputError
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.client import (PARSE_ERRORS, ChatRequest, ChatResult, ChatRunner, Usage, cache_key,
                                 generation_params)
from mtrbench.llm.config import JudgeConfig

if TYPE_CHECKING:
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

    def __repr__(self) -> str:
        return f"HFChatClient(judge={self.judge.name!r}, model={self._path!r})"

    def cache_key(self, request: ChatRequest) -> str:
        return cache_key(self.judge, request)

    # -- model ---------------------------------------------------------------------------------------------

    def _load(self) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
        if self._model is None or self._tokenizer is None:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            device = self._device
            if device == "auto":
                device = "cuda" if torch.cuda.is_available() else "cpu"
            try:
                tokenizer = self._tokenizer or AutoTokenizer.from_pretrained(self._path)
                model = self._model or AutoModelForCausalLM.from_pretrained(
                    self._path, dtype=torch.bfloat16 if device.startswith("cuda") else torch.float32)
            except (OSError, ValueError) as err:
                raise ModelError(f"hf://{self._path}: cannot load a causal LM and its tokenizer ({err})") from None
            self._model, self._tokenizer = model.to(device).eval(), tokenizer
        tokenizer = self._tokenizer
        if not getattr(tokenizer, "chat_template", None):
            raise ModelError(f"hf://{self._path}: the tokenizer has no chat template; use an instruct/chat model")
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        return self._model, tokenizer

    def generate_ids(self, requests: Sequence[ChatRequest]) -> list[list[int]]:
        """New token ids for one batch of requests (left-padded, one ``generate`` call)."""
        import torch

        model, tokenizer = self._load()
        prompts = [tokenizer.apply_chat_template(r.messages, add_generation_prompt=True, tokenize=False)
                   for r in requests]
        batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        batch = {k: batch[k].to(model.device) for k in ("input_ids", "attention_mask")}
        params = generation_params(self.judge, requests[0])
        temperature = float(params.get("temperature") or 0.0)
        sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
        with torch.no_grad():
            out = model.generate(**batch, max_new_tokens=int(params.get("max_tokens") or 256),
                                 pad_token_id=tokenizer.pad_token_id, **sampling)
        width = batch["input_ids"].shape[1]
        model_eos = model.generation_config.eos_token_id
        model_eos = model_eos if isinstance(model_eos, list) else [model_eos]
        stops = {tokenizer.eos_token_id, tokenizer.pad_token_id, *model_eos} - {None}
        replies = []
        for row in out[:, width:].tolist():
            end = next((i for i, t in enumerate(row) if t in stops), len(row))
            replies.append(row[:end])
        return replies

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
        try:
            if todo:
                _, tokenizer = self._load()
                # similar lengths share a batch: less padding
                todo.sort(key=lambda i: sum(len(m.get("content") or "") for m in requests[i].messages))
            for start in range(0, len(todo), size):
                chunk = todo[start:start + size]
                batch_requests = [requests[i] for i in chunk]
                ids = self.generate_ids(batch_requests)
                for index, request, reply_ids in zip(chunk, batch_requests, ids):
                    text = tokenizer.decode(reply_ids, skip_special_tokens=True).strip()
                    result = self._finish(request, text, len(reply_ids))
                    results[index] = result
                    if on_result is not None:
                        on_result(result)
                    bar.update(1)
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
        return ChatResult(key=request.key, ok=True, text=record["text"], value=value, error=None, attempts=0,
                          cached=True, prompt_tokens=0, completion_tokens=0)

    def _finish(self, request: ChatRequest, text: str, n_tokens: int) -> ChatResult:
        self.usage.requests += 1
        self.usage.completion_tokens += n_tokens
        parse = request.parse or (lambda reply: reply)
        try:
            value = parse(text)
        except PARSE_ERRORS as err:
            self.usage.failures += 1
            reason = " ".join(str(err).split())[:200] or type(err).__name__
            return ChatResult(key=request.key, ok=False, text=text, value=None,
                              error=f"unparseable (greedy decoding, not retried): {reason}", attempts=1,
                              cached=False, prompt_tokens=0, completion_tokens=n_tokens)
        if self.cache is not None:
            self.cache.put(self.cache_key(request), {"text": text, "model": self.judge.model,
                                                     "completion_tokens": n_tokens, "created": time.time()})
        return ChatResult(key=request.key, ok=True, text=text, value=value, error=None, attempts=1, cached=False,
                          prompt_tokens=0, completion_tokens=n_tokens)


def make_client(judge: JudgeConfig, cache: ResponseCache | None = None) -> ChatRunner:
    """The client for a judge: the in-process HF backend for ``hf://`` base URLs, else the HTTP client."""
    if is_hf_url(judge.base_url):
        return HFChatClient(judge, cache)
    from mtrbench.llm.client import ChatClient

    return ChatClient(judge, cache)
