"""The seeded plan of every conversation: which cluster it starts in, and each turn's move.

Turn 1 starts the conversation. ``hard_switches`` turns, drawn among turns 3..T, switch abruptly to
another (seeded) cluster; every other turn is a soft switch along the current cluster with probability
``soft_switch_probability`` (the seed cites a topic switch every 2.11 turns), else a drill-down on the
current document. The plan depends only on the seed and the settings, never on replies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

START, DRILL, SOFT, HARD = "start", "drill", "soft", "hard"


@dataclass(frozen=True)
class PlanOptions:
    conversations: int | None = None  # None: one per cluster
    turns: int = 8
    hard_switches: int = 1
    soft_switch_probability: float = 0.5
    seed: int = 0


@dataclass(frozen=True)
class ConversationPlan:
    conversation_id: str
    cluster: int
    moves: tuple[str, ...]  # one per turn
    hard_clusters: tuple[int, ...]  # the cluster each hard switch goes to, in order


def plan_conversations(n_clusters: int, options: PlanOptions) -> list[ConversationPlan]:
    count = n_clusters if options.conversations is None else min(options.conversations, n_clusters)
    plans = []
    for index in range(count):
        rng = np.random.default_rng([options.seed, index])
        hard_turns: set[int] = set()
        candidates = list(range(3, options.turns + 1))
        if n_clusters > 1 and candidates and options.hard_switches > 0:
            picked = rng.choice(candidates, size=min(options.hard_switches, len(candidates)), replace=False)
            hard_turns = {int(t) for t in picked}
        moves = [START]
        for turn in range(2, options.turns + 1):
            soft = rng.random() < options.soft_switch_probability  # drawn every turn: plans stay aligned
            moves.append(HARD if turn in hard_turns else SOFT if soft else DRILL)
        others = [c for c in range(n_clusters) if c != index]
        hard_clusters = (
            tuple(int(c) for c in rng.choice(others, size=len(hard_turns), replace=False)) if hard_turns else ()
        )
        plans.append(ConversationPlan(f"synth-{index:05d}", index, tuple(moves), hard_clusters))
    return plans
