"""Session measures (formulas in docs/simulate.md).

* turn gain: nDCG@k of a turn's ranked passages, linear gain (the grade) and log2 discount, the ideal ranking
  made from every grade known for the need at that turn (its qrels plus the labels given to the turn's passages);
  a failed system turn gains 0 and is counted apart;
* session-discounted gain: ``sum_t gain_t / (1 + log_b t)`` over the session's turns (sDCG's turn discount,
  Järvelin et al. 2008; ``b`` = 4 by default);
* turns to satisfaction: the system turns a satisfied session took; averaged over satisfied sessions;
* abandonment rate: abandoned sessions over the sessions the user finished (satisfied or abandoned).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

DEFAULT_K = 10
DEFAULT_BASE = 4.0


def ndcg(ranked: Sequence[str], grades: Mapping[str, int], k: int = DEFAULT_K) -> float:
    dcg = sum(grades.get(doc, 0) / math.log2(rank + 1) for rank, doc in enumerate(ranked[:k], 1))
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    best = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, 1))
    return dcg / best if best > 0 else 0.0


def session_gain(gains: Sequence[float], base: float = DEFAULT_BASE) -> float:
    return sum(g / (1 + math.log(t, base)) for t, g in enumerate(gains, 1))


@dataclass(frozen=True)
class SessionScore:
    session_id: str
    status: str
    turns: int
    failed_turns: int
    turn_gains: tuple[float, ...]
    sdcg: float


@dataclass(frozen=True)
class Summary:
    sessions: int
    satisfied: int
    abandoned: int
    user_failed: int
    turns_to_satisfaction: float | None
    abandonment_rate: float | None
    mean_sdcg: float
    failed_turns: int
    turns: int


def summarize(scores: Sequence[SessionScore]) -> Summary:
    satisfied = [s for s in scores if s.status == "satisfied"]
    abandoned = sum(1 for s in scores if s.status == "abandoned")
    finished = len(satisfied) + abandoned
    return Summary(
        sessions=len(scores),
        satisfied=len(satisfied),
        abandoned=abandoned,
        user_failed=sum(1 for s in scores if s.status == "user_failed"),
        turns_to_satisfaction=sum(s.turns for s in satisfied) / len(satisfied) if satisfied else None,
        abandonment_rate=abandoned / finished if finished else None,
        mean_sdcg=sum(s.sdcg for s in scores) / len(scores) if scores else 0.0,
        failed_turns=sum(s.failed_turns for s in scores),
        turns=sum(s.turns for s in scores),
    )
