"""Per-turn means with bootstrap confidence bands, resampling whole conversations.

Queries of one conversation are not independent (they share a topic and a history), so the band at a turn
resamples conversations, not queries: draw the turn's conversations with replacement and take the mean
over all their queries at that turn (a cluster bootstrap; with one query per conversation and turn, as
in most tasks, it is the ordinary percentile bootstrap of the mean). Seeded, so a page re-renders the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

N_RESAMPLES = 2000
SEED = 0
CONFIDENCE = 0.95


@dataclass(frozen=True)
class TurnBand:
    turn: int
    n_queries: int
    n_conversations: int
    mean: float
    low: float
    high: float


def conversation_bootstrap(
    sums: np.ndarray,
    counts: np.ndarray,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> tuple[float, float]:
    """Percentile interval of sum(values)/count(values) over conversations drawn with replacement."""
    m = len(sums)
    if m < 2:
        value = float(sums.sum() / counts.sum())
        return value, value
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, m, size=(n_resamples, m))
    means = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def turn_bands(
    rows: Iterable[tuple[str, int, float]],
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> list[TurnBand]:
    """``(conversation_id, turn, value)`` per query -> one band per turn, turns ascending."""
    by_turn: dict[int, dict[str, list[float]]] = {}
    for conversation, turn, value in rows:
        by_turn.setdefault(int(turn), {}).setdefault(str(conversation), []).append(float(value))
    bands = []
    for turn in sorted(by_turn):
        conversations = by_turn[turn]
        sums = np.array([sum(v) for v in conversations.values()])
        counts = np.array([len(v) for v in conversations.values()], dtype=float)
        low, high = conversation_bootstrap(sums, counts, n_resamples, seed, confidence)
        bands.append(TurnBand(turn, int(counts.sum()), len(conversations), float(sums.sum() / counts.sum()), low, high))
    return bands
