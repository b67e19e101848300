from mtrbench.measures.trec_eval import TrecEvalFamily


class MAP(TrecEvalFamily):
    name, label, aliases, key_stem, order = "map", "MAP", ("AP", "map_cut"), "map", 40
    trec_measure = "map_cut"
    uses_relevance_level = True
    definition = (
        "average precision over the top k: sum of precision at each relevant rank <= k, divided by "
        "all relevant documents of the query (trec_eval map_cut)"
    )
    citation = "trec_eval (Buckley & Voorhees); NIST TREC"


FAMILY = MAP()
