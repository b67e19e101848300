"""MTRAG's official retrieval conventions (IBM/mt-rag-benchmark ``scripts/evaluation/run_retrieval_eval.py``),
re-implemented over pytrec_eval as the script uses it:

* a retrieved document whose id equals the query id is dropped first;
* every judged query the run answers is evaluated, one with no relevant document too (it scores 0), where
  trec_eval's protocol leaves it out of the mean;
* a judged query missing from the run is skipped, where trec_eval's protocol scores it 0;
* each collection's means are rounded to 5 decimals;
* the "all" row averages the collections' rounded means weighted by each collection's number of predictions
  (every prediction of it, judged or not), unrounded.

The script computes nDCG (``ndcg_cut``) and Recall (``recall``) at 1, 3 and 5; trec_eval's other measures that
are 0 for a query without a relevant document (P, MAP, MRR, Hit) are accepted with the same conventions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mtrbench.formats.qrels import Qrels
from mtrbench.formats.run import Run
from mtrbench.infra.errors import DataError, MtrbenchError
from mtrbench.measures.base import Measure
from mtrbench.measures.compute import evaluate, zero_filled
from mtrbench.measures.protocols.base import RoundedEvaluation

DECIMALS = 5
FAMILIES = ("ndcg", "recall", "precision", "map", "mrr", "hit")  # each 0 for a query without a relevant document


def score_mtrag(qrels: Qrels, run: Run, measures: Sequence[Measure], relevance_level: int) -> RoundedEvaluation:
    kept = {qid: {doc: s for doc, s in docs.items() if doc != qid} for qid, docs in run.items()}
    judged = [qid for qid in qrels if qid in kept]
    if not judged:
        raise MtrbenchError(f"the run answers none of the {len(qrels)} judged queries: nothing to evaluate")
    positive = {qid: qrels[qid] for qid in judged if any(g > 0 for g in qrels[qid].values())}
    if not positive:
        raise MtrbenchError("no judged query in the run has a relevant document: every score would be 0")
    scored = evaluate(positive, {qid: kept[qid] for qid in positive}, list(measures), relevance_level=relevance_level)
    return RoundedEvaluation(
        per_query=zero_filled(scored, judged),
        excluded=[],
        metric_keys=scored.metric_keys,
        aggregates=scored.aggregates,
        relevance_level=scored.relevance_level,
        measures=scored.measures,
        details=scored.details,
        decimals=DECIMALS,
        skipped=[qid for qid in qrels if qid not in kept],
    )


@dataclass(frozen=True)
class CollectionRow:
    """One row of the script's ``*_aggregate.csv``: a collection's means and its number of predictions."""

    collection: str
    scores: dict[str, float]
    count: int


def all_row(rows: Sequence[CollectionRow]) -> CollectionRow:
    """The script's "all" row: each key's collection means weighted by the collections' prediction counts."""
    if not rows:
        raise DataError("no collection to average")
    keys = [k for k in rows[0].scores if all(k in r.scores for r in rows)]
    total = sum(r.count for r in rows)
    return CollectionRow("all", {k: sum(r.scores[k] * r.count for r in rows) / total for k in keys}, total)
