"""`eval --task ikat-2023 --corpus SUBSET`: judged passages the corpus lacks still count under the official
protocol (they are in the ideal ranking and the recall denominators, as the organisers' trec_eval -c has them),
and the result records the partial corpus either way (issue 42, section 1; docs/protocols.md).

Six judgments by hand over the first three turns of the published 2023 topics, three of them naming a passage
outside the corpus (turn 3's only one); the expected scores are pytrec_eval's on the run the eval wrote.
"""

from __future__ import annotations

import json

import pytest
import pytrec_eval

from mtrbench.pipeline.evaluate import run_eval
from mtrbench.pipeline.partial_corpus import SCORED_ANYWAY, PartialCorpus
from mtrbench.pipeline.plan import EvalConfig
from tests.data.ikat_fixtures import topics, turn_ids

IN = ["clueweb22-en0000-00-00001:1", "clueweb22-en0000-00-00003:1", "clueweb22-en0000-00-00004:1"]
OUT = ["clueweb22-en0000-00-00002:1", "clueweb22-en0000-00-00005:1", "clueweb22-en0000-00-00006:1"]


@pytest.fixture(scope="module")
def subset(tmp_path_factory):
    folder = tmp_path_factory.mktemp("partial")
    t1, t2, t3 = turn_ids(2023)[:3]
    qrels = {t1: {IN[0]: 2, OUT[0]: 2, IN[1]: 0}, t2: {IN[2]: 1, OUT[1]: 3}, t3: {OUT[2]: 2}}
    lines = [f"{q} Q0 {doc} {grade}\n" for q, docs in qrels.items() for doc, grade in docs.items()]
    (folder / "2023-qrels.all-turns.txt").write_text("".join(lines))
    asked = [turn["utterance"] for turn in topics(2023)[0]["turns"][:3]]
    docs = [(IN[0], asked[0]), (IN[1], f"{asked[0]} {asked[1]}"), (IN[2], asked[1])]
    docs += [(f"clueweb22-en0001-00-{n:05d}:0", "unrelated filler words") for n in range(5)]
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": d, "contents": text}) + "\n" for d, text in docs))
    return folder, corpus, qrels


def _eval(folder, corpus, protocol):
    config = EvalConfig(
        data_dir=str(folder),
        corpus_path=str(corpus),
        output_dir=folder / protocol,
        protocol=protocol,
        metrics=["nDCG@5", "R@5"],
        k_values=[5],
    )
    [result] = run_eval("bm25", "ikat-2023", config)
    return result


def _pytrec_means(qrels, run, qids):
    values = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.5", "recall.5"}, relevance_level=2).evaluate(run)
    names = {"ndcg_at_5": "ndcg_cut_5", "recall_at_5": "recall_5"}
    return {key: sum(values.get(q, {}).get(name, 0.0) for q in qids) / len(qids) for key, name in names.items()}


def test_official_scores_every_judgment_and_records_the_partial_corpus(subset):
    folder, corpus, qrels = subset
    result = _eval(folder, corpus, "official")
    run = result.run()
    assert result.n_evaluated == 3  # turn 3, all of whose judged passages are outside the corpus, counts (0)
    assert result.scores == pytest.approx(_pytrec_means(qrels, run, list(qrels)), abs=1e-12)
    assert result.meta["partial_corpus"] == {"judged": 6, "not_in_corpus": 3, "scored": True}
    note = PartialCorpus.from_result(result.meta).note()
    assert note == "partial corpus: 3 of 6 judged passages not in the corpus (scored as judged)"
    assert result.warnings[SCORED_ANYWAY] == 3 and "qrels naming unknown documents (dropped)" not in result.warnings


def test_trec_eval_scores_what_the_corpus_holds_and_says_so(subset):
    folder, corpus, qrels = subset
    result = _eval(folder, corpus, "trec_eval")
    kept = {q: {d: g for d, g in docs.items() if d in IN} for q, docs in qrels.items()}
    kept = {q: docs for q, docs in kept.items() if docs}  # turn 3 has no judgment left
    assert result.n_evaluated == 2
    assert result.scores == pytest.approx(_pytrec_means(kept, result.run(), list(kept)), abs=1e-12)
    assert result.meta["partial_corpus"] == {"judged": 6, "not_in_corpus": 3, "scored": False}
    note = PartialCorpus.from_result(result.meta).note()
    assert note == "partial corpus: 3 of 6 judged passages not in the corpus (their judgments left out)"
    assert result.warnings["qrels naming unknown documents (dropped)"] == 3
