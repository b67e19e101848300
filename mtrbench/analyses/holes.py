"""Holes in relevance judgments, under three definitions that must not be confused.

* ``hole_unjudged_at_k`` (per query, :mod:`mtrbench.measures.families.hole_unjudged`): share of the query's top-k documents that carry no judgment
  for that query, denominator min(k, documents retrieved); 0 for an empty ranking.
  It equals 1 - ir_measures' Judged@k.
* ``hole_beir_at_k`` (:mod:`mtrbench.measures.families.hole_beir`): BEIR's / mteb's ``Hole@k``: a document is a hole if no query at all judges it
  (J = every doc id in the qrels, any grade); each query adds |holes in top-k| / k, and the sum is
  divided by the number of judged queries. Reproduced with BEIR's own conventions (stable score
  sort, every run query counted) so the numbers match BEIR's ``evaluate_custom(..., "hole")``.
* ``hole_bridge_at_k`` (BRIDGE, DREAM §4.2): share of the top-k that are relevant in a refined
  qrels set but not in the original one (the holes that refinement filled); denominator k.
"""

from __future__ import annotations

from collections.abc import Sequence

from mtrbench.formats.qrels import Qrels
from mtrbench.formats.run import Run, ranked


def filled_holes(original: Qrels, refined: Qrels) -> Qrels:
    """Per query: documents relevant in ``refined`` but not in ``original`` (BRIDGE's H(q))."""
    holes: Qrels = {}
    for qid, docs in refined.items():
        before = {d for d, g in original.get(qid, {}).items() if g > 0}
        new = {d: g for d, g in docs.items() if g > 0 and d not in before}
        if new:
            holes[qid] = new
    return holes


def hole_bridge(
    original: Qrels, refined: Qrels, run: Run, k_values: Sequence[int], qids: Sequence[str] | None = None
) -> dict[str, dict[str, float]]:
    """Per query (``qids`` or every query of ``refined``): {"hole_bridge_at_k": value}."""
    holes = filled_holes(original, refined)
    out: dict[str, dict[str, float]] = {}
    for qid in qids if qids is not None else refined:
        top = [doc for doc, _ in ranked(run.get(qid, {}))]
        new = holes.get(qid, {})
        out[qid] = {f"hole_bridge_at_{k}": sum(1 for d in top[:k] if d in new) / k for k in k_values}
    return out
