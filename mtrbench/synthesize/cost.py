"""The seed's cost model for synthesis (MTR-SUITE App. A.5.4), shown before any request is sent.

A dialogue of T turns is priced as a prefix-cached chain: the first turn's input is a cache miss, the
other T-1 hit the prefix cache; each turn has ``input_tokens_per_turn`` input and ``output_tokens_per_turn``
output tokens. With the seed's numbers (3,000 in, 80 out, DeepSeek-V3.2 on OpenRouter: $0.24 miss, $0.19
hit, $0.38 output per 1M tokens) an 8-turn dialogue costs 0.0049532 USD, the seed's "about $0.005". The
seed prices a turn as one unit; the three agents send three requests per turn, counted separately.
"""

from __future__ import annotations

from dataclasses import dataclass

AGENTS_PER_TURN = 3


@dataclass(frozen=True)
class SeedCostModel:
    input_tokens_per_turn: int = 3000
    output_tokens_per_turn: int = 80
    input_miss_usd_per_mtok: float = 0.24
    input_hit_usd_per_mtok: float = 0.19
    output_usd_per_mtok: float = 0.38

    def dialogue_usd(self, turns: int) -> float:
        if turns <= 0:
            return 0.0
        miss = self.input_tokens_per_turn * self.input_miss_usd_per_mtok
        hits = (turns - 1) * self.input_tokens_per_turn * self.input_hit_usd_per_mtok
        output = turns * self.output_tokens_per_turn * self.output_usd_per_mtok
        return (miss + hits + output) / 1_000_000


@dataclass(frozen=True)
class SynthesisEstimate:
    conversations: int
    turns: int
    requests: int
    input_tokens: int
    output_tokens: int
    usd: float

    def lines(self) -> list[str]:
        per = self.usd / self.conversations if self.conversations else 0.0
        return [
            f"synthesis cost estimate (seed's cost model, App. A.5.4): {self.conversations} conversations x "
            f"{self.turns} turns = {self.requests} requests ({AGENTS_PER_TURN} agents per turn)",
            f"  ~{self.input_tokens:,} input tokens, ~{self.output_tokens:,} output tokens, "
            f"~${self.usd:,.4f} (${per:.4f} per conversation)",
        ]


def estimate_synthesis(conversations: int, turns: int, model: SeedCostModel) -> SynthesisEstimate:
    return SynthesisEstimate(
        conversations=conversations,
        turns=turns,
        requests=conversations * turns * AGENTS_PER_TURN,
        input_tokens=conversations * turns * model.input_tokens_per_turn,
        output_tokens=conversations * turns * model.output_tokens_per_turn,
        usd=conversations * model.dialogue_usd(turns),
    )
