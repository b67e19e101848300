from collections import defaultdict
from collections.abc import Sequence

import pytrec_eval

from mtrbench.formats.run import ranked
from mtrbench.measures.base import Computed, Measure, MeasureFamily, MeasureInputs


class MRR(MeasureFamily):
    name, label, aliases, key_stem, order = "mrr", "MRR", ("RR", "recip_rank"), "mrr", 30
    uses_relevance_level = True
    definition = (
        "1 / rank of the first relevant document within the top k, 0 if none: trec_eval's "
        "recip_rank on each ranking cut to k (trec_eval itself has no cut)"
    )
    citation = "Voorhees, The TREC-8 Question Answering Track Report, TREC 1999"

    def compute(self, measures: Sequence[Measure], inputs: MeasureInputs, computed: Computed) -> Computed:
        out = Computed()
        by_level: dict[int, list[Measure]] = defaultdict(list)
        for m in measures:
            by_level[m.rel].append(m)
        for level, group in by_level.items():
            evaluator = pytrec_eval.RelevanceEvaluator(inputs.qrels, {"recip_rank"}, relevance_level=level)
            for m in group:
                cut = {qid: dict(ranked(docs)[: m.cutoff]) for qid, docs in inputs.run.items()}
                scores = evaluator.evaluate(cut)
                out.per_query[m] = {qid: scores[qid]["recip_rank"] for qid in inputs.qrels}
        return out


FAMILY = MRR()
