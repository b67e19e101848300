from mtrbench.measures.trec_eval import TrecEvalFamily


class Precision(TrecEvalFamily):
    name, label, aliases, key_stem, order = "precision", "P", ("prec",), "precision", 50
    trec_measure = "P"
    uses_relevance_level = True
    definition = "relevant documents in the top k / k (trec_eval P_k)"
    citation = "trec_eval (Buckley & Voorhees); NIST TREC"


FAMILY = Precision()
