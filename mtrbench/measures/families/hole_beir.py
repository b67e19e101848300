from collections.abc import Sequence

from mtrbench.measures.base import Computed, Measure, MeasureFamily, MeasureInputs


class HoleBeir(MeasureFamily):
    name, label, aliases, key_stem, order = "hole_beir", "Hole-BEIR", ("hole",), "hole_beir", 80
    per_query = False
    definition = (
        "BEIR's Hole@k: a document no query judges is a hole; sum over every run query of "
        "|holes in its top k| / k, divided by the number of judged queries; rounded to 5 decimals"
    )
    citation = "Thakur et al., BEIR: A Heterogeneous Benchmark for Zero-shot Evaluation of IR Models, NeurIPS 2021"

    def compute(self, measures: Sequence[Measure], inputs: MeasureInputs, computed: Computed) -> Computed:
        judged_anywhere = {doc for docs in inputs.all_qrels.values() for doc in docs}
        # BEIR ranks with a stable sort on score alone and counts every query of the run
        tops = [
            [doc for doc, _ in sorted(docs.items(), key=lambda item: item[1], reverse=True)]
            for docs in inputs.raw_run.values()
        ]
        out = Computed()
        for m in measures:
            total = sum(sum(1 for d in top[: m.cutoff] if d not in judged_anywhere) / m.cutoff for top in tops)
            out.aggregate[m] = round(total / len(inputs.all_qrels), 5)
        return out


FAMILY = HoleBeir()
