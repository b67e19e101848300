"""Everything computed from one run beyond the plain means: refined-qrels comparison with BRIDGE
Hole@k, RAGAlign, bootstrap confidence intervals. Shared by ``mtrbench eval`` and ``mtrbench score``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mtrbench.analyses.holes import hole_bridge
from mtrbench.analyses.significance import N_RESAMPLES, SEED, bootstrap_ci
from mtrbench.formats.qrels import Qrels
from mtrbench.formats.run import Run
from mtrbench.infra.errors import MtrbenchError
from mtrbench.measures import Evaluation, Measure, evaluate
from mtrbench.measures.families.ragalign import ragalign_binary, ragalign_pointbiserial

DEFAULT_RAGALIGN_BINARY = "hit_rate_at_10"
DEFAULT_RAGALIGN_CONTINUOUS = "ndcg_at_10"


def confidence_intervals(evaluation: Evaluation, keys: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"method": f"percentile bootstrap of the mean, {N_RESAMPLES} resamples, seed {SEED}"}
    for key in keys:
        if key in evaluation.metric_keys:
            values = [row[key] for row in evaluation.per_query.values()]
            out[key] = list(bootstrap_ci(values))
    return out


def refined_comparison(
    original: Qrels, refined: Qrels, run: Run, measures: Sequence[Measure], relevance_level: int = 1
) -> dict[str, Any]:
    """Scores on the original and the refined qrels, their difference, and BRIDGE Hole@k at the
    measures' cutoffs."""
    on_original = evaluate(original, run, measures, relevance_level)
    on_refined = evaluate(refined, run, measures, relevance_level)
    k_values = sorted({m.cutoff for m in measures})
    so, sr = on_original.scores(), on_refined.scores()
    holes = hole_bridge(original, refined, run, k_values, qids=list(on_refined.per_query))
    n = len(holes)
    hole_means = {f"hole_bridge_at_{k}": sum(h[f"hole_bridge_at_{k}"] for h in holes.values()) / n for k in k_values}
    return {
        "original": so,
        "refined": sr,
        "difference": {key: sr[key] - so[key] for key in sr if key in so},
        "hole_bridge": hole_means,
        "queries": {"original": len(on_original.per_query), "refined": len(on_refined.per_query)},
        "_evaluations": (on_original, on_refined),
    }


def ragalign_report(
    evaluations: dict[str, Evaluation], generation: dict[str, int], binary_key: str, continuous_key: str
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, evaluation in evaluations.items():
        for key, fn in ((binary_key, ragalign_binary), (continuous_key, ragalign_pointbiserial)):
            if key not in evaluation.metric_keys:
                raise MtrbenchError(f"RAGAlign needs {key} among the computed metrics (--metrics/--k)")
            values = {q: row[key] for q, row in evaluation.per_query.items()}
            kind = "binary" if fn is ragalign_binary else "point_biserial"
            out.setdefault(label, {})[kind] = fn(values, generation, key).as_dict()
    return out
