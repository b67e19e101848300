from collections.abc import Sequence

from mtrbench.formats.run import ranked
from mtrbench.measures.base import Computed, Measure, MeasureFamily, MeasureInputs


class HoleUnjudged(MeasureFamily):
    name, label, aliases, key_stem, order = "hole_unjudged", "Hole-unjudged", ("unjudged",), "hole_unjudged", 70
    definition = (
        "share of the query's top k that carry no judgment for that query, over min(k, retrieved); "
        "0 for an empty ranking (= 1 - ir_measures' Judged@k)"
    )
    citation = "MacAvaney, Macdonald & Ounis, Streamlining Evaluation with ir-measures, ECIR 2022 (Judged@k)"

    def compute(self, measures: Sequence[Measure], inputs: MeasureInputs, computed: Computed) -> Computed:
        out = Computed()
        for m in measures:
            values = {}
            for qid, judged in inputs.qrels.items():
                head = [doc for doc, _ in ranked(inputs.run.get(qid, {}))[: m.cutoff]]
                values[qid] = sum(1 for d in head if d not in judged) / len(head) if head else 0.0
            out.per_query[m] = values
        return out


FAMILY = HoleUnjudged()
