from mtrbench.measures.trec_eval import TrecEvalFamily


class NDCG(TrecEvalFamily):
    name, label, aliases, key_stem, order = "ndcg", "nDCG", ("ndcg_cut",), "ndcg", 10
    trec_measure = "ndcg_cut"
    definition = (
        "normalized discounted cumulative gain of the top k: gains are the qrels grades, "
        "log2 rank discount (trec_eval ndcg_cut)"
    )
    citation = "Järvelin & Kekäläinen, Cumulated gain-based evaluation of IR techniques, TOIS 2002"


FAMILY = NDCG()
