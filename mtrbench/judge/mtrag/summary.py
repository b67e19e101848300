"""Means per answerability class and overall, and the SemEval-2026 Task 8 harmonic mean.

An instance contributes its first value of a per-target metric (the official scripts' ``[0]``) and the mean over
passages of a per-passage one; a missing or NaN value (RL_F without statements, a judge that never answered) is
left out of the mean and counted. The Task C score is the harmonic mean of the overall means of RB_agg, RL_F and
RB_llm (H-RAG: 3 / (1/0.2488 + 1/0.2703 + 1/0.6508) = 0.3241), computed for the plain metrics and for each
conditioned family whose three members are present.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from mtrbench.judge.mtrag.algorithmic import PER_PASSAGE

OVERALL = "all"
HARMONIC_PARTS = ("RB_agg", "RL_F", "RB_llm")
VARIANTS = ("", "_idk", "_idk_underspecified")


def instance_value(name: str, values: Sequence[float | None]) -> float | None:
    present = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not present:
        return None
    if name.split("_idk")[0] in PER_PASSAGE:
        return sum(present) / len(present)
    return float(values[0]) if values[0] is not None and not math.isnan(float(values[0])) else None


def harmonic_mean(values: Sequence[float]) -> float:
    """n / sum(1/x); 0 when any value is 0."""
    if any(v == 0 for v in values):
        return 0.0
    return len(values) / sum(1 / v for v in values)


def summarize(instances: Sequence[tuple[str | None, Mapping[str, Sequence[float | None]]]]) -> dict[str, object]:
    """``instances``: (answerability, metrics) per task. Means per class and overall, counts, harmonic means."""
    sums: dict[str, dict[str, list[float]]] = {}
    missing: dict[str, int] = {}
    counts: dict[str, int] = {}
    for answerability, metrics in instances:
        label = answerability or "UNKNOWN"
        counts[label] = counts.get(label, 0) + 1
        for name, values in metrics.items():
            value = instance_value(name, values)
            if value is None:
                missing[name] = missing.get(name, 0) + 1
                continue
            for group in (label, OVERALL):
                sums.setdefault(group, {}).setdefault(name, []).append(value)
    means = {group: {name: sum(v) / len(v) for name, v in sorted(by_name.items())} for group, by_name in sums.items()}
    overall = means.get(OVERALL, {})
    harmonic = {}
    for suffix in VARIANTS:
        names = [f"{part}{suffix}" for part in HARMONIC_PARTS]
        if all(n in overall for n in names):
            harmonic[f"HM({', '.join(names)})"] = harmonic_mean([overall[n] for n in names])
    return {
        "instances": sum(counts.values()),
        "per_class_instances": dict(sorted(counts.items())),
        "means": means,
        "values_left_out": dict(sorted(missing.items())),
        "harmonic_means": harmonic,
    }
