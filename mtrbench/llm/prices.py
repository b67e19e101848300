"""Token prices: what a judge's tokens cost (the cost estimate and the usage reports read them)."""

from __future__ import annotations

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
