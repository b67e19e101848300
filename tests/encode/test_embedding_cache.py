"""Embedding cache: hit, miss, invalidation, resume after an interruption, corrupt shards, `mtrbench cache`."""

from __future__ import annotations

import copy
import json
import logging
from dataclasses import replace

import pytest
import torch

from mtrbench.cli import main
from mtrbench.data.model import Corpus
from mtrbench.encode.cache import CacheKey, EmbeddingCache, corpus_fingerprint
from mtrbench.encode.engine import EncodingEngine
from mtrbench.encode.towers import SentenceTransformerTower

N_DOCS = 20
SHARD = 4  # 5 shards


@pytest.fixture(scope="module")
def corpus(shared):
    from mtrbench.data import load_task

    full = load_task("mtrbench-sample").corpus
    return Corpus(full.ids[:N_DOCS], full.titles[:N_DOCS], full.texts[:N_DOCS])


@pytest.fixture(scope="module")
def reference(minilm, corpus):
    """A fresh full encoding of the corpus, no cache involved."""
    texts = [corpus.document_text(i) for i in range(len(corpus))]
    return minilm.doc_engine.encode(texts, minilm.doc_prompt, minilm.normalize).cpu()


class CountingEngine:
    """The retriever's engine, recording what each encode call was asked for."""

    def __init__(self, engine: EncodingEngine) -> None:
        self.engine = engine
        self.tower = engine.tower
        self.device = engine.device
        self.requests: list[int] = []

    def encode(self, texts, *args, **kwargs):
        self.requests.append(len(texts))
        return self.engine.encode(texts, *args, **kwargs)

    def settings(self):
        return self.engine.settings()


def cached_retriever(minilm, tmp_path, shard_docs=SHARD):
    retriever = copy.copy(minilm)  # shares the loaded model; own cache and counters
    retriever.cache = EmbeddingCache(tmp_path / "cache", shard_docs=shard_docs)
    retriever.doc_engine = CountingEngine(minilm.doc_engine)
    return retriever


def shard_files(tmp_path):
    return sorted((tmp_path / "cache").glob("*/shard-*.safetensors"))


def test_miss_then_hit(minilm, corpus, reference, tmp_path):
    retriever = cached_retriever(minilm, tmp_path)
    retriever.index(corpus)
    assert retriever.doc_engine.requests == [N_DOCS]
    assert len(shard_files(tmp_path)) == N_DOCS // SHARD
    assert retriever.cache_report.encoded == 5 and not retriever.cache_report.hit
    first = retriever._doc_emb.clone()
    torch.testing.assert_close(first, reference, atol=1e-5, rtol=0)

    again = cached_retriever(minilm, tmp_path)
    again.index(corpus)
    assert again.doc_engine.requests == []  # nothing encoded: every shard came from disk
    assert again.cache_report.hit and again.cache_report.loaded == 5
    assert torch.equal(again._doc_emb, first)


@pytest.mark.slow
def test_one_changed_passage_or_prompt_or_max_length_re_encodes(minilm, corpus, tmp_path):
    retriever = cached_retriever(minilm, tmp_path)
    retriever.index(corpus)
    keys = {retriever.cache_report.key}

    edited = Corpus(list(corpus.ids), list(corpus.titles), list(corpus.texts))
    edited.texts[13] = edited.texts[13] + " (edited)"
    changed = cached_retriever(minilm, tmp_path)
    changed.index(edited)
    assert changed.doc_engine.requests == [N_DOCS]
    keys.add(changed.cache_report.key)

    prompted = cached_retriever(minilm, tmp_path)
    prompted.doc_prompt = "passage: "
    prompted.index(corpus)
    assert prompted.doc_engine.requests == [N_DOCS]
    keys.add(prompted.cache_report.key)

    model = minilm.model
    try:
        model.max_seq_length = 32
        short = cached_retriever(minilm, tmp_path)
        tower = SentenceTransformerTower(model, minilm.doc_engine.tower.spec)
        short.doc_engine = CountingEngine(EncodingEngine(tower))
        short.index(corpus)
    finally:
        model.max_seq_length = 256
    assert short.doc_engine.requests == [N_DOCS]
    keys.add(short.cache_report.key)
    assert len(keys) == 4
    assert len(EmbeddingCache(tmp_path / "cache").entries()) == 4


def test_key_covers_every_field():
    key = CacheKey(
        model="m",
        revision="r",
        prompt="",
        pipeline={"pooling": "cls"},
        normalize=True,
        max_length=256,
        dtype="fp32",
        corpus=corpus_fingerprint(["a"], ["x"]),
        n_docs=1,
    )
    variants = [
        replace(key, model="m2"),
        replace(key, revision="r2"),
        replace(key, prompt="p"),
        replace(key, pipeline={"pooling": "mean"}),
        replace(key, normalize=False),
        replace(key, max_length=128),
        replace(key, dtype="bf16"),
    ]
    assert len({key.digest(), *(v.digest() for v in variants)}) == 8
    assert key.digest() == replace(key).digest()


def test_corpus_fingerprint_sees_order_ids_and_boundaries():
    base = corpus_fingerprint(["a", "b"], ["x", "y"])
    assert base == corpus_fingerprint(["a", "b"], ["x", "y"])
    assert base != corpus_fingerprint(["b", "a"], ["y", "x"])  # order
    assert base != corpus_fingerprint(["a", "c"], ["x", "y"])  # an id
    assert corpus_fingerprint(["a"], ["bc"]) != corpus_fingerprint(["ab"], ["c"])  # where one field ends


def test_resume_encodes_only_missing_shards(minilm, corpus, reference, tmp_path, monkeypatch):
    retriever = cached_retriever(minilm, tmp_path)
    written = []
    real_write = EmbeddingCache._write_shard

    def write_then_die(self, path, tensor, digest, index, bounds):
        if len(written) == 3:
            raise KeyboardInterrupt  # killed after three shards
        real_write(self, path, tensor, digest, index, bounds)
        written.append(index)

    monkeypatch.setattr(EmbeddingCache, "_write_shard", write_then_die)
    with pytest.raises(KeyboardInterrupt):
        retriever.index(corpus)
    monkeypatch.setattr(EmbeddingCache, "_write_shard", real_write)
    assert written == [0, 1, 2] and len(shard_files(tmp_path)) == 3
    manifest = json.loads(next((tmp_path / "cache").glob("*/manifest.json")).read_text())
    assert manifest["complete"] is False

    resumed = cached_retriever(minilm, tmp_path)
    resumed.index(corpus)
    assert resumed.doc_engine.requests == [2 * SHARD]  # shards 3 and 4 only
    assert resumed.cache_report.loaded == 3 and resumed.cache_report.encoded == 2
    torch.testing.assert_close(resumed._doc_emb, reference, atol=1e-5, rtol=0)
    assert not list((tmp_path / "cache").glob("*/*.tmp"))


def test_corrupt_shards_are_counted_and_re_encoded(minilm, corpus, reference, tmp_path, caplog):
    cached_retriever(minilm, tmp_path).index(corpus)
    files = shard_files(tmp_path)
    files[1].write_bytes(files[1].read_bytes()[:100])  # truncated by a crash of something else
    from safetensors.torch import save_file

    save_file({"embeddings": torch.zeros(3, 384)}, str(files[3]))  # wrong shape, no metadata
    retriever = cached_retriever(minilm, tmp_path)
    with caplog.at_level(logging.WARNING):
        retriever.index(corpus)
    report = retriever.cache_report
    assert report.corrupt == 2 and report.encoded == 2 and report.loaded == 3
    assert retriever.doc_engine.requests == [2 * SHARD]
    assert "2 corrupt shard(s)" in caplog.text
    torch.testing.assert_close(retriever._doc_emb, reference, atol=1e-5, rtol=0)
    healed = cached_retriever(minilm, tmp_path)
    healed.index(corpus)
    assert healed.doc_engine.requests == [] and healed.cache_report.corrupt == 0


def test_no_cache_writes_nothing(minilm, corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("MTRBENCH_CACHE_DIR", str(tmp_path / "env"))
    retriever = copy.copy(minilm)
    retriever.cache = None
    retriever.index(corpus)
    assert not (tmp_path / "env").exists()
    assert EmbeddingCache().root == tmp_path / "env" / "embeddings"


def fill(cache: EmbeddingCache, model: str, prompt: str, n_docs: int = 6) -> str:
    """A complete cache entry made without a model (ls/rm only read manifests and files)."""
    texts = [f"text {i}" for i in range(n_docs)]
    key = CacheKey(
        model=model,
        revision="r",
        prompt=prompt,
        pipeline={},
        normalize=True,
        max_length=8,
        dtype="fp32",
        corpus=corpus_fingerprint([str(i) for i in range(n_docs)], texts),
        n_docs=n_docs,
    )
    cache.load_or_encode(
        key, texts, lambda todo, sizes, on_chunk: [on_chunk(i, torch.ones(s, 4)) for i, s in enumerate(sizes)]
    )
    return key.digest()


def test_cache_ls_and_rm(tmp_path, capsys):
    root = str(tmp_path / "cache")
    cache = EmbeddingCache(root, shard_docs=4)
    a, b, c = fill(cache, "org/a", ""), fill(cache, "org/a", "passage: "), fill(cache, "org/b", "")
    assert len({a, b, c}) == 3

    assert main(["cache", "ls", "--cache-dir", root]) == 0
    listing = capsys.readouterr().out
    assert all(key[:12] in listing for key in (a, b, c)) and "3 entries" in listing
    assert "org/a" in listing and "org/b" in listing and "fp32" in listing

    assert main(["cache", "rm", c[:10], "--cache-dir", root]) == 0
    assert sorted(e.key for e in cache.entries()) == sorted([a, b])
    assert main(["cache", "rm", "ffffffffff", "--cache-dir", root]) == 2
    assert "no cache entry" in capsys.readouterr().err
    assert main(["cache", "rm", "--model", "someone/else", "--cache-dir", root]) == 2
    assert main(["cache", "rm", "--model", "org/a", "--cache-dir", root]) == 0
    assert cache.entries() == []

    fill(cache, "org/c", "")
    assert main(["cache", "rm", "--all", "--cache-dir", root]) == 0
    assert cache.entries() == [] and (tmp_path / "cache").is_dir()
    assert main(["cache", "rm", "--cache-dir", root]) == 2  # nothing chosen
    assert main(["cache", "ls", "--cache-dir", root]) == 0
    assert "no cached embeddings" in capsys.readouterr().out


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_shards_with_non_finite_values_are_re_encoded(tmp_path, dtype, bad):
    """A shard whose metadata checks out but which holds NaN or ±inf (a broken fp16 run, a bit flip) is corrupt."""
    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    cache = EmbeddingCache(tmp_path, shard_docs=4)
    texts = [f"text {i}" for i in range(10)]
    key = CacheKey(
        model="m",
        revision="r",
        prompt="",
        pipeline={},
        normalize=False,
        max_length=8,
        dtype=dtype,
        corpus=corpus_fingerprint([str(i) for i in range(10)], texts),
        n_docs=10,
    )
    calls = []

    def encode(todo, sizes, on_chunk):
        calls.append(list(todo))
        start = 0
        for i, size in enumerate(sizes):
            rows = [int(t.split()[1]) for t in todo[start : start + size]]
            on_chunk(i, torch.tensor([[r, r + 0.5, -r] for r in rows], dtype=torch_dtype))
            start += size

    expected, _ = cache.load_or_encode(key, texts, encode)
    folder = tmp_path / key.digest()
    poisoned = expected[4:8].clone()
    poisoned[2, 1] = bad
    cache._write_shard(folder / "shard-00001.safetensors", poisoned, key.digest(), 1, (4, 8))
    calls.clear()
    healed, report = cache.load_or_encode(key, texts, encode)
    assert report.corrupt == 1 and report.loaded == 2 and report.encoded == 1
    assert report.messages == ["shard 1: non-finite values"]
    assert calls == [texts[4:8]]
    assert torch.equal(healed, expected) and healed.dtype == torch_dtype


def test_cache_rm_takes_the_model_alias_eval_takes(tmp_path, capsys):
    """`--model minilm` removes the entries recorded under MiniLM's checkpoint id, and only those."""
    root = str(tmp_path / "cache")
    cache = EmbeddingCache(root, shard_docs=4)
    fill(cache, "sentence-transformers/all-MiniLM-L6-v2", "")
    fill(cache, "sentence-transformers/all-MiniLM-L6-v2", "passage: ")
    other = fill(cache, "BAAI/bge-base-en-v1.5", "")
    assert main(["cache", "rm", "--model", "minilm", "--cache-dir", root]) == 0
    assert [e.key for e in cache.entries()] == [other]
    assert "removed 2 cache entries" in capsys.readouterr().out
    assert main(["cache", "rm", "--model", "bge-base", "--cache-dir", root]) == 0  # alias -> BAAI/bge-base-en-v1.5
    assert cache.entries() == []
