"""System-ranking agreement between real and simulated sessions: Kendall's tau (scipy) and tau_AP (Yilmaz,
Aslam and Robertson, SIGIR 2008), each with a percentile bootstrap interval over the needs.

Input: per system, a score per need on the real conversations and on the simulated sessions of the same needs.
A system's score is its mean over the needs both sides have for every system.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mtrbench.infra.errors import DataError

Scores = Mapping[str, Mapping[str, float]]  # system -> need -> score


def tau_ap(truth: Mapping[str, float], estimate: Mapping[str, float]) -> float:
    """tau_AP of the ranking by ``estimate`` against the ranking by ``truth`` (higher score = better):
    ``2/(N-1) * sum_{i=2..N} C(i)/(i-1) - 1``, where, going down the estimated ranking, C(i) counts the systems
    above rank i that ``truth`` also puts above the system at rank i. Ties in ``estimate`` are broken by name."""
    order = sorted(estimate, key=lambda name: (-estimate[name], name))
    n = len(order)
    if n < 2:
        raise ValueError("tau_AP needs at least two systems")
    total = 0.0
    for i in range(1, n):
        correct = sum(1 for above in order[:i] if truth[above] > truth[order[i]])
        total += correct / i
    return 2.0 / (n - 1) * total - 1.0


def kendall_tau(truth: Mapping[str, float], estimate: Mapping[str, float]) -> float:
    from scipy.stats import kendalltau  # scipy loads only when agreement is computed

    names = sorted(truth)
    return float(kendalltau([truth[n] for n in names], [estimate[n] for n in names]).statistic)


@dataclass(frozen=True)
class Agreement:
    systems: int
    needs: int
    tau: float
    tau_ap: float
    tau_interval: tuple[float, float]
    tau_ap_interval: tuple[float, float]
    samples: int


def _means(scores: Scores, needs: Sequence[str]) -> dict[str, float]:
    return {system: sum(per[n] for n in needs) / len(needs) for system, per in scores.items()}


def common_needs(real: Scores, simulated: Scores) -> list[str]:
    if set(real) != set(simulated):
        raise DataError(f"the real and simulated scores name different systems: {sorted(set(real) ^ set(simulated))}")
    if len(real) < 2:
        raise DataError("ranking agreement needs at least two systems")
    needs = set.intersection(*(set(p) for p in [*real.values(), *simulated.values()]))
    if not needs:
        raise DataError("no need is scored for every system on both sides")
    return sorted(needs)


def agreement(real: Scores, simulated: Scores, samples: int = 1000, seed: int = 0) -> Agreement:
    import numpy as np  # loaded only when agreement runs

    needs = common_needs(real, simulated)
    truth, estimate = _means(real, needs), _means(simulated, needs)
    rng = np.random.default_rng(seed)
    taus, taps = [], []
    for _ in range(samples):
        drawn = [needs[i] for i in rng.integers(0, len(needs), len(needs))]
        t, e = _means(real, drawn), _means(simulated, drawn)
        tau = kendall_tau(t, e)
        if tau == tau:  # NaN when a resample ties every system on one side
            taus.append(tau)
        taps.append(tau_ap(t, e))
    return Agreement(
        len(real), len(needs), kendall_tau(truth, estimate), tau_ap(truth, estimate),
        _interval(taus), _interval(taps), samples,
    )  # fmt: skip


def _interval(values: Sequence[float]) -> tuple[float, float]:
    import numpy as np

    if not values:
        return (float("nan"), float("nan"))
    low, high = np.percentile(values, [2.5, 97.5])
    return (float(low), float(high))


def read_rankings(path: str | Path) -> tuple[Scores, Scores]:
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"--rankings {path}: cannot read it as JSON ({exc})") from None
    sides = []
    for side in ("real", "simulated"):
        scores = raw.get(side) if isinstance(raw, dict) else None
        if not isinstance(scores, dict) or not all(
            isinstance(per, dict) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in per.values())
            for per in scores.values()
        ):
            raise DataError(f'--rankings {path}: needs "{side}": {{system: {{need: number}}}}')
        sides.append({s: {n: float(v) for n, v in per.items()} for s, per in scores.items()})
    return sides[0], sides[1]
