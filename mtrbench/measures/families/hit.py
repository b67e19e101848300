from mtrbench.measures.trec_eval import TrecEvalFamily


class Hit(TrecEvalFamily):
    name, label, aliases, key_stem, order = "hit", "Hit", ("success", "hit_rate"), "hit_rate", 60
    trec_measure = "success"
    uses_relevance_level = True
    definition = "1 if a relevant document is in the top k, else 0 (trec_eval success_k)"
    citation = "trec_eval (Buckley & Voorhees); NIST TREC"


FAMILY = Hit()
