"""Families computed by trec_eval's own C code (pytrec_eval), batched: one evaluator per
relevance level for every such measure of a run."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import pytrec_eval

from mtrbench.measures.base import Computed, Measure, MeasureFamily, MeasureInputs


class TrecEvalFamily(MeasureFamily):
    """A cut measure of trec_eval: ``{trec_measure}.{k}`` gives per-query ``{trec_measure}_{k}``."""

    trec_measure: str  # e.g. "ndcg_cut", "recall", "P", "map_cut", "success"

    def compute(self, measures: Sequence[Measure], inputs: MeasureInputs, computed: Computed) -> Computed:
        return evaluate_trec(measures, inputs)


def evaluate_trec(measures: Sequence[Measure], inputs: MeasureInputs) -> Computed:
    """Every trec_eval-backed measure in one pytrec_eval call per relevance level."""
    by_level: dict[int, list[Measure]] = defaultdict(list)
    for m in measures:
        by_level[m.rel if m.rel is not None else inputs.task_level].append(m)
    out = Computed()
    for level, group in by_level.items():
        requested: dict[str, set[int]] = defaultdict(set)
        for m in group:
            requested[m.spec.trec_measure].add(m.cutoff)
        # pytrec_eval takes "ndcg_cut.1,3,5"; recall, P and success take comma lists too
        names = {f"{name}.{','.join(map(str, sorted(ks)))}" for name, ks in requested.items()}
        scores = pytrec_eval.RelevanceEvaluator(inputs.qrels, names, relevance_level=level).evaluate(inputs.run)
        for m in group:
            field = f"{m.spec.trec_measure}_{m.cutoff}"
            out.per_query[m] = {qid: scores[qid][field] for qid in inputs.qrels}
    return out
