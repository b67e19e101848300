"""The cost estimate shown before a run, its confirmation, and the dry run's text.

The estimate and the dry run reach the person running the command through ``mtrbench.infra.reporting`` (the
command line shows them on stdout); nothing here prints."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from mtrbench.infra.errors import UserInputError
from mtrbench.infra.reporting import report
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig, display_url, resolve_base_url
from mtrbench.llm.prices import PRICES, price_for, usd_for_tokens  # noqa: F401 (PRICES, price_for: importable here)
from mtrbench.llm.types import ChatRequest, cache_key, generation_params

CHARS_PER_TOKEN = 4  # rough average for English text with BPE tokenizers


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


def cost_table(estimates: Sequence[tuple[JudgeConfig, CostEstimate]]) -> str:
    """The estimate table, one judge per row, and the total (lines without a final newline)."""
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
    lines = ["LLM cost estimate (prompt tokens ~ characters/4; retries not included):"]
    lines += ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)) for row in rows]
    lines.append(f"  total: ${sum(known):,.2f}" + (" + unknown-price judges" if unknown else ""))
    return "\n".join(lines)


def confirm_cost(estimates: Sequence[tuple[JudgeConfig, CostEstimate]], yes: bool) -> None:
    """Report the estimate table; unless ``yes``, ask on a terminal, and refuse on a non-terminal.

    Nothing is asked when every request is already cached (nothing would be sent).
    """
    report(cost_table(estimates))
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


def dry_run_text(requests: Sequence[ChatRequest], judges: Sequence[JudgeConfig], n_show: int = 2) -> str:
    """The first ``n_show`` prompts and how many requests a real run would send (no final newline)."""
    lines: list[str] = []
    for index, request in enumerate(requests[:n_show], start=1):
        flags = " (JSON reply requested)" if request.want_json else ""
        lines.append(f"--- prompt {index}/{len(requests)}: {request.key}{flags} ---")
        for message in request.messages:
            lines.append(f"[{message.get('role', '?')}]")
            lines.append(str(message.get("content", "")))
        lines.append("")
    for judge in judges:
        lines.append(f"judge {judge.name}: model {judge.model} at {display_url(resolve_base_url(judge))}")
    total = len(requests) * len(judges)
    lines.append(
        f"dry run: {len(requests)} requests x {len(judges)} judge(s) = {total} chat completions; nothing was sent"
    )
    return "\n".join(lines)


def print_dry_run(requests: Sequence[ChatRequest], judges: Sequence[JudgeConfig], n_show: int = 2) -> None:
    """Report :func:`dry_run_text` (the name is kept for its callers: it no longer prints itself); no network."""
    report(dry_run_text(requests, judges, n_show))
