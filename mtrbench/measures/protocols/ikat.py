"""TREC iKAT's (and TREC CAsT 2022's) official passage-ranking conventions, as the organisers score runs with
trec_eval over the NIST qrels:

* nDCG is graded, the raw grades (0-4) as gains;
* the binary measures (P@k, Recall@k, MAP, MRR) count grade >= 2 as relevant (the card's relevance level);
* the mean runs over every turn in the qrels (``trec_eval -c``): a judged turn missing from the run scores 0,
  and so does a judged turn without a relevant passage, where mtrbench's trec_eval protocol leaves it out;
* ties are broken as trec_eval breaks them (score descending, then passage id descending).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from mtrbench.formats.qrels import Qrels
from mtrbench.formats.run import Run
from mtrbench.infra.errors import MtrbenchError
from mtrbench.measures.base import Measure
from mtrbench.measures.compute import Evaluation, evaluate, zero_filled

FAMILIES = ("ndcg", "recall", "precision", "map", "mrr", "hit")  # each 0 for a turn without a relevant passage


def score_ikat(qrels: Qrels, run: Run, measures: Sequence[Measure], relevance_level: int) -> Evaluation:
    """Every judged turn of ``qrels`` scored (0 where the run misses it or nothing in it is relevant)."""
    if not qrels:
        raise MtrbenchError("no judged turn: nothing to evaluate")
    positive = {qid: docs for qid, docs in qrels.items() if any(g > 0 for g in docs.values())}
    if not positive:
        raise MtrbenchError("no judged turn has a relevant passage: every score would be 0")
    scored = evaluate(positive, run, list(measures), relevance_level=relevance_level)
    return replace(scored, per_query=zero_filled(scored, qrels), excluded=[])
