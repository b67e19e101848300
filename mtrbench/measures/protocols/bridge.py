"""BRIDGE's official P@k and nDCG@k (DISL-Lab/BRIDGE-Benchmark ``retrieval/evaluation.py``), re-implemented:

* P@k divides the relevant documents among the top k by the number of documents retrieved there
  (``min(k, retrieved)``), not by k; a query with nothing retrieved scores 0 (BRIDGE's code would divide by 0);
* nDCG@k uses binary gains (relevant = grade >= the task's relevance level) and an ideal DCG over all the
  query's relevant documents, not only the best k.

Every other measure (Hit, Recall, MRR, MAP) is trec_eval's: BRIDGE's hit rate and recall equal it, and it has
no MRR or MAP. Queries without a relevant document are left out, as BRIDGE skips an empty ``doc_id`` list.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mtrbench.formats.qrels import Qrels
from mtrbench.formats.run import Run, ranked
from mtrbench.measures.base import Measure
from mtrbench.measures.compute import Evaluation, evaluate


def precision_at(top: list[str], relevant: set[str]) -> float:
    return sum(doc in relevant for doc in top) / len(top) if top else 0.0


def ndcg_at(top: list[str], relevant: set[str]) -> float:
    ideal = sum(1 / math.log2(rank + 2) for rank in range(len(relevant)))
    gained = sum(1 / math.log2(rank + 2) for rank, doc in enumerate(top) if doc in relevant)
    return gained / ideal if ideal else 0.0


OFFICIAL = {"precision": precision_at, "ndcg": ndcg_at}


def score_bridge(qrels: Qrels, run: Run, measures: Sequence[Measure], relevance_level: int) -> Evaluation:
    evaluation = evaluate(qrels, run, measures, relevance_level=relevance_level)
    for key, measure in evaluation.measures.items():
        formula = OFFICIAL.get(measure.family)
        if formula is None or key not in evaluation.metric_keys:
            continue
        level = measure.rel if measure.rel is not None else relevance_level
        for qid, values in evaluation.per_query.items():
            relevant = {doc for doc, grade in qrels[qid].items() if grade >= level}
            top = [doc for doc, _ in ranked(run.get(qid, {}))[: measure.cutoff]]
            values[key] = formula(top, relevant)
    return evaluation
