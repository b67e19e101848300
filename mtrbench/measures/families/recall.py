from mtrbench.measures.trec_eval import TrecEvalFamily


class Recall(TrecEvalFamily):
    name, label, aliases, key_stem, order = "recall", "Recall", ("R",), "recall", 20
    trec_measure = "recall"
    uses_relevance_level = True
    definition = (
        "relevant documents in the top k / all relevant documents of the query, not capped at k (trec_eval recall_k)"
    )
    citation = "trec_eval (Buckley & Voorhees); NIST TREC"


FAMILY = Recall()
