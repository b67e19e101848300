"""Token prices, the cost estimate shown before a run, and the dry run."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from mtrbench.infra.errors import UserInputError
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.client import ChatRequest, cache_key, display_url, generation_params, resolve_base_url
from mtrbench.llm.config import JudgeConfig

# USD per 1M (input, output) tokens. List prices as of writing (mid 2025); providers change them, so a
# judge's price_input_per_mtok / price_output_per_mtok or the judges file's "prices" mapping override these.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "deepseek-chat": (0.27, 1.10),
}
CHARS_PER_TOKEN = 4  # rough average for English text with BPE tokenizers


def price_for(judge: JudgeConfig) -> tuple[float, float] | None:
    """(input, output) USD per 1M tokens: the judge's own prices, else the table (an OpenRouter-style
    "openai/gpt-4o" is looked up as "gpt-4o"); None when unknown."""
    if (judge.base_url or "").startswith("hf://"):
        return 0.0, 0.0  # runs on this machine
    table = PRICES.get(judge.model) or PRICES.get(judge.model.rsplit("/", 1)[-1])
    prompt_price = (
        judge.price_input_per_mtok if judge.price_input_per_mtok is not None else (table[0] if table else None)
    )
    completion_price = (
        judge.price_output_per_mtok if judge.price_output_per_mtok is not None else (table[1] if table else None)
    )
    if prompt_price is None or completion_price is None:
        return None
    return prompt_price, completion_price


def usd_for_tokens(judge: JudgeConfig, prompt_tokens: int, completion_tokens: int) -> float | None:
    prices = price_for(judge)
    if prices is None:
        return None
    return (prompt_tokens * prices[0] + completion_tokens * prices[1]) / 1_000_000


@dataclass
class CostEstimate:
    n_requests: int  # all requests of the run
    prompt_tokens: int  # estimated, for the requests not in the cache
    completion_tokens: int
    usd: float | None  # None: unknown price for this model
    cached: int  # requests already answered in the cache (cost 0)

    @property
    def to_send(self) -> int:
        return self.n_requests - self.cached


def estimate_cost(
    requests: Sequence[ChatRequest],
    judge: JudgeConfig,
    cache: ResponseCache | None = None,
    completion_tokens_per_request: int = 200,
) -> CostEstimate:
    """Rough cost of running ``requests`` on ``judge``: prompt tokens ~ characters / 4, a fixed number of
    completion tokens per request (at most max_tokens); requests in the cache cost nothing. Parse
    retries and transport retries are not foreseen, so the real cost can be higher."""
    prompt_tokens = completion_tokens = cached = 0
    for request in requests:
        if cache is not None and cache_key(judge, request) in cache:
            cached += 1
            continue
        chars = sum(len(str(m.get("content") or "")) for m in request.messages)
        prompt_tokens += math.ceil(chars / CHARS_PER_TOKEN)
        max_tokens = int(generation_params(judge, request).get("max_tokens") or completion_tokens_per_request)
        completion_tokens += min(completion_tokens_per_request, max_tokens)
    return CostEstimate(
        n_requests=len(requests),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        usd=usd_for_tokens(judge, prompt_tokens, completion_tokens),
        cached=cached,
    )


def _usd_text(usd: float | None) -> str:
    return "unknown price" if usd is None else f"${usd:,.2f}"


def confirm_cost(estimates: Sequence[tuple[JudgeConfig, CostEstimate]], yes: bool) -> None:
    """Print the estimate table; unless ``yes``, ask on a terminal, and refuse on a non-terminal.

    Nothing is asked when every request is already cached (nothing would be sent).
    """
    rows = [("judge", "model", "requests", "cached", "~prompt tok", "~completion tok", "~cost")]
    for judge, est in estimates:
        rows.append(
            (
                judge.name,
                judge.model,
                str(est.n_requests),
                str(est.cached),
                f"{est.prompt_tokens:,}",
                f"{est.completion_tokens:,}",
                _usd_text(est.usd),
            )
        )
    known = [est.usd for _, est in estimates if est.usd is not None]
    unknown = any(est.usd is None and est.to_send for _, est in estimates)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    print("LLM cost estimate (prompt tokens ~ characters/4; retries not included):")
    for row in rows:
        print("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)))
    total = f"${sum(known):,.2f}" + (" + unknown-price judges" if unknown else "")
    print(f"  total: {total}")
    if yes or not any(est.to_send for _, est in estimates):
        return
    if not sys.stdin.isatty():
        raise UserInputError(
            "the run needs confirmation of the cost estimate above; pass --yes to run without "
            "asking (or --dry-run to only see the prompts)"
        )
    try:
        answer = input("Proceed? [y/N] ").strip().lower()
    except EOFError:
        answer = ""
    if answer not in ("y", "yes"):
        raise UserInputError("cancelled: cost estimate not confirmed")


def print_dry_run(requests: Sequence[ChatRequest], judges: Sequence[JudgeConfig], n_show: int = 2) -> None:
    """Print the first ``n_show`` prompts and how many requests a real run would send; no network."""
    for index, request in enumerate(requests[:n_show], start=1):
        flags = " (JSON reply requested)" if request.want_json else ""
        print(f"--- prompt {index}/{len(requests)}: {request.key}{flags} ---")
        for message in request.messages:
            print(f"[{message.get('role', '?')}]")
            print(message.get("content", ""))
        print()
    for judge in judges:
        print(f"judge {judge.name}: model {judge.model} at {display_url(resolve_base_url(judge))}")
    total = len(requests) * len(judges)
    print(f"dry run: {len(requests)} requests x {len(judges)} judge(s) = {total} chat completions; nothing was sent")
