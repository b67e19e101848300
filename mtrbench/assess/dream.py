"""The DREAM debate for one (query, document) pair, as a state machine (seed §3.1, Eq. 2).

Agent A opens with the stance "relevant", Agent B with "not relevant". Each round both agents see
the pair and a history: in round 1 the two opening stances, in round j > 1 the reasons and labels
of round j-1. The debate ends with the agreed label as soon as both give the same label, or, after
``max_rounds`` rounds without agreement, as a disagreement for escalation (humans or an adjudicator).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mtrbench.assess.prompts import Verdict, stance_statement


@dataclass(frozen=True)
class Agent:
    name: str
    opening_stance: bool  # True: "relevant"


AGENT_A = Agent("Agent A", True)
AGENT_B = Agent("Agent B", False)
AGENTS = (AGENT_A, AGENT_B)

DEBATING, CONSENSUS, DISAGREEMENT = "debating", "consensus", "disagreement"


@dataclass
class Debate:
    max_rounds: int
    rounds: list[tuple[Verdict, Verdict]] = field(default_factory=list)  # (Agent A, Agent B) per round

    def __post_init__(self) -> None:
        if self.max_rounds < 1:
            raise ValueError("a debate needs at least one round")

    @property
    def state(self) -> str:
        if self.rounds and self.rounds[-1][0].relevant == self.rounds[-1][1].relevant:
            return CONSENSUS
        return DISAGREEMENT if len(self.rounds) >= self.max_rounds else DEBATING

    @property
    def next_round(self) -> int | None:
        """1-based number of the round to run next; None once the debate is over."""
        return len(self.rounds) + 1 if self.state == DEBATING else None

    @property
    def label(self) -> bool | None:
        return self.rounds[-1][0].relevant if self.state == CONSENSUS else None

    @property
    def consensus_round(self) -> int | None:
        return len(self.rounds) if self.state == CONSENSUS else None

    def history(self) -> list[tuple[str, str]]:
        """What the agents see in the next round (or the adjudicator after the last): (speaker, statement)."""
        if not self.rounds:
            return [(agent.name, stance_statement(agent.opening_stance)) for agent in AGENTS]
        return [(agent.name, verdict.statement()) for agent, verdict in zip(AGENTS, self.rounds[-1])]

    def add_round(self, verdict_a: Verdict, verdict_b: Verdict) -> None:
        if self.next_round is None:
            raise ValueError(f"the debate is over ({self.state}); no round {len(self.rounds) + 1}")
        self.rounds.append((verdict_a, verdict_b))

    def rounds_as_dicts(self) -> list[dict[str, Any]]:
        return [
            {"round": n, **{agent.name: verdict.as_dict() for agent, verdict in zip(AGENTS, pair)}}
            for n, pair in enumerate(self.rounds, 1)
        ]

    @classmethod
    def from_dicts(cls, max_rounds: int, rounds: list[dict[str, Any]]) -> Debate:
        return cls(
            max_rounds, [(Verdict.from_dict(r[AGENT_A.name]), Verdict.from_dict(r[AGENT_B.name])) for r in rounds]
        )
