"""The encoding engine returns what sentence-transformers' own encode returns, in input order, whatever
the batching; batching and pooling primitives against hand computations."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mtrbench.encode.batching import Ragged, packed_arrays, padded_arrays, plan_batches
from mtrbench.encode.engine import EncodingEngine, EngineOptions
from mtrbench.encode.pooling import pool_packed, pool_padded
from mtrbench.encode.towers import SentenceTransformerTower

# Very different lengths: empty, one word, longer than MiniLM's 256-token limit, punctuation/unicode.
TEXTS = [
    "",
    "bridge",
    "Who designed the Orrin Suspension Bridge, and when did it open to traffic?",
    "lake " * 400,
    "The Varnholm char lives only in Lake Varnholm. " * 12,
    "Ünïcode — ‘quotes’ and\ttabs",
    "a b c d e f g",
    "river " * 255,
]


_REFERENCES: dict = {}


def st_reference(model, texts, prompt):
    """sentence-transformers' own encode (memoized: several tests compare against the same inputs)."""
    key = (tuple(texts), prompt)
    if key not in _REFERENCES:
        _REFERENCES[key] = model.encode(
            texts,
            prompt=prompt or None,
            convert_to_tensor=True,
            normalize_embeddings=True,
            batch_size=32,
            show_progress_bar=False,
        ).float()
    return _REFERENCES[key]


def assert_same_vectors(ours, reference, min_cos=0.9999):
    assert ours.shape == reference.shape
    cos = F.cosine_similarity(ours.float(), reference.float(), dim=-1)
    assert cos.min().item() >= min_cos, cos


@pytest.fixture(scope="module")
def model(minilm):
    return minilm.model


@pytest.mark.parametrize(
    "prompt,options",
    [
        ("", EngineOptions()),
        ("", EngineOptions(token_budget=300)),  # a tiny budget: many batches of different shapes
        ("query: ", EngineOptions(max_batch_size=3)),
    ],
)
def test_engine_equals_sentence_transformers(minilm, model, prompt, options):
    ours = EncodingEngine(minilm.doc_engine.tower, options).encode(TEXTS, prompt=prompt, normalize=True)
    assert_same_vectors(ours, st_reference(model, TEXTS, prompt))


def test_input_order_is_kept(minilm, model):
    engine = minilm.doc_engine
    base = engine.encode(TEXTS, normalize=True)
    order = [5, 3, 0, 7, 1, 6, 2, 4]
    shuffled = engine.encode([TEXTS[i] for i in order], normalize=True)
    torch.testing.assert_close(shuffled, base[order], atol=1e-5, rtol=0)
    # distinct texts give distinct vectors, so a permutation would have been caught
    assert F.cosine_similarity(base[1], base[6], dim=0) < 0.99


def test_prompt_changes_the_embedding_like_sentence_transformers(minilm, model):
    engine = minilm.doc_engine
    with_prompt = engine.encode(TEXTS[1:3], prompt="Represent this sentence: ", normalize=True)
    without = engine.encode(TEXTS[1:3], normalize=True)
    assert F.cosine_similarity(with_prompt, without, dim=-1).max() < 0.999
    assert_same_vectors(with_prompt, st_reference(model, TEXTS[1:3], "Represent this sentence: "))


def test_fallback_to_sentence_transformers_preprocess(minilm, model):
    tower = SentenceTransformerTower(model, minilm.doc_engine.tower.spec)
    tower._fast_ok = False  # as for a model whose fast tokenization would differ from preprocess
    ours = EncodingEngine(tower, EngineOptions(token_budget=512)).encode(TEXTS, prompt="query: ", normalize=True)
    assert not tower.fast_tokenization
    assert_same_vectors(ours, st_reference(model, TEXTS, "query: "))


def test_packed_batches_equal_padded(minilm, model):
    tower = SentenceTransformerTower(model, minilm.doc_engine.tower.spec)
    try:
        engine = EncodingEngine(tower, EngineOptions(unpad="on", token_budget=700))
        assert engine.packed and engine.settings()["attention"] == "reference"
        assert_same_vectors(
            engine.encode(TEXTS, prompt="query: ", normalize=True), st_reference(model, TEXTS, "query: ")
        )
    finally:
        model[0].auto_model.set_attn_implementation("sdpa")


def test_empty_input_and_chunk_callbacks(minilm):
    engine = minilm.doc_engine
    assert engine.encode([]).shape == (0, 384)
    seen = []
    out = engine.encode(
        TEXTS, normalize=True, chunk_sizes=[3, 0, 5], on_chunk=lambda i, emb: seen.append((i, emb.clone()))
    )
    assert [i for i, _ in seen] == [0, 1, 2]
    torch.testing.assert_close(seen[0][1], out[:3])
    assert seen[1][1].shape[0] == 0
    torch.testing.assert_close(seen[2][1], out[3:])
    with pytest.raises(ValueError):
        engine.encode(TEXTS, chunk_sizes=[3])


def test_tokenizer_error_reaches_the_caller(minilm, monkeypatch):
    tower = minilm.doc_engine.tower
    engine = EncodingEngine(tower)

    def broken(texts, *args, **kwargs):
        raise RuntimeError("tokenizer exploded")

    monkeypatch.setattr(tower, "tokenize", broken)
    with pytest.raises(RuntimeError, match="tokenizer exploded"):
        engine.encode(TEXTS)


@pytest.mark.parametrize("unpad", ["off", "on"])
def test_out_of_memory_splits_the_batch(minilm, model, monkeypatch, unpad):
    tower = SentenceTransformerTower(model, minilm.doc_engine.tower.spec)
    try:
        engine = EncodingEngine(tower, EngineOptions(token_budget=100_000, unpad=unpad))
        assert engine.packed == (unpad == "on")
        real_forward = tower.forward
        tried, ran = [], []

        def forward(tensors, packed):
            rows = len(tensors["cu_seq_lens_q"]) - 1 if packed else tensors["input_ids"].shape[0]
            tried.append(rows)
            if rows > 2:
                raise torch.cuda.OutOfMemoryError("simulated")
            ran.append(rows)
            return real_forward(tensors, packed)

        monkeypatch.setattr(tower, "forward", forward)
        out = engine.encode(TEXTS, normalize=True)
    finally:
        model[0].auto_model.set_attn_implementation("sdpa")
    assert tried[0] == len(TEXTS) and sum(ran) == len(TEXTS) and max(ran) <= 2
    assert_same_vectors(out, st_reference(model, TEXTS, ""))


@pytest.mark.slow
def test_one_process_per_device(minilm, model):
    # Two CPU "devices" exercise the spawn pool the multi-GPU path uses.
    engine = EncodingEngine(minilm.doc_engine.tower, devices=["cpu", "cpu"])
    try:
        out = engine.encode(TEXTS * 2, normalize=True, chunk_sizes=[10, 6])
    finally:
        engine.close()
    assert_same_vectors(out, st_reference(model, TEXTS * 2, ""))


# -- primitives --------------------------------------------------------------------------------------


def test_plan_batches_by_token_budget():
    lengths = [5, 50, 20, 20, 3, 120]
    # padded: sorted longest first [120, 50, 20, 20, 5, 3] (positions 5, 1, 2, 3, 0, 4);
    # budget 100: [120] alone (over budget), then 50*2 = 100 fits, then 20*4 = 80 fits the rest
    batches = plan_batches(lengths, 100)
    assert [b.tolist() for b in batches] == [[5], [1, 2], [3, 0, 4]]
    # packed: sums 120 | 50+20+20 = 90 (+5 = 95, +3 = 98) all fit after the first
    assert [b.tolist() for b in plan_batches(lengths, 100, packed=True)] == [[5], [1, 2, 3, 0, 4]]
    assert [b.tolist() for b in plan_batches(lengths, 1000, max_batch_size=4)] == [[5, 1, 2, 3], [0, 4]]
    assert plan_batches([], 10) == []


def test_padded_arrays_equal_the_tokenizer(minilm):
    tokenizer = minilm.tokenizer
    texts = ["hello there", "", "a much longer sentence with more words in it"]
    ids = [tokenizer(t)["input_ids"] for t in texts]
    tokens = Ragged.from_lists(ids)
    rows = np.array([2, 0, 1])
    input_ids, mask = padded_arrays(tokens, rows, tokenizer.pad_token_id)
    reference = tokenizer([texts[r] for r in rows], padding=True, return_tensors="np")
    np.testing.assert_array_equal(input_ids, reference["input_ids"])
    np.testing.assert_array_equal(mask, reference["attention_mask"])
    left_ids, left_mask = padded_arrays(tokens, np.array([0, 2]), 0, padding_side="left")
    assert left_mask[0].tolist() == [0] * (len(ids[2]) - len(ids[0])) + [1] * len(ids[0])
    assert left_ids[0, -len(ids[0]) :].tolist() == ids[0]


def test_packed_arrays():
    tokens = Ragged.from_lists([[7, 8, 9], [4], [1, 2]])
    input_ids, positions, cu, longest = packed_arrays(tokens, np.array([2, 0]), position_offset=2)
    assert input_ids.tolist() == [[1, 2, 7, 8, 9]]
    assert positions.tolist() == [[2, 3, 2, 3, 4]]
    assert cu.tolist() == [0, 2, 5] and cu.dtype == np.int32
    assert longest == 3


def test_pooling_against_hand_computation():
    hidden = torch.arange(2 * 4 * 3, dtype=torch.float32).reshape(2, 4, 3)
    right = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    assert pool_padded(hidden, right, "cls").tolist() == [[0, 1, 2], [12, 13, 14]]
    assert pool_padded(hidden, right, "last").tolist() == [[6, 7, 8], [15, 16, 17]]
    assert pool_padded(hidden, right, "mean").tolist() == [[3, 4, 5], [13.5, 14.5, 15.5]]
    left = torch.tensor([[0, 1, 1, 1], [0, 0, 0, 1]])
    assert pool_padded(hidden, left, "cls").tolist() == [[3, 4, 5], [21, 22, 23]]
    assert pool_padded(hidden, left, "last").tolist() == [[9, 10, 11], [21, 22, 23]]
    flat = torch.tensor([[0.0, 0], [2, 2], [4, 8], [1, 1], [3, 5]])
    cu = torch.tensor([0, 3, 5], dtype=torch.int32)
    assert pool_packed(flat, cu, "cls").tolist() == [[0, 0], [1, 1]]
    assert pool_packed(flat, cu, "last").tolist() == [[4, 8], [3, 5]]
    torch.testing.assert_close(pool_packed(flat, cu, "mean"), torch.tensor([[2, 10 / 3], [2, 3]]))


def test_threaded_tokenization_equals_one_thread(minilm):
    """On CUDA the engine tokenizes a window on several threads; the ids must be those of one call, in order."""
    from concurrent.futures import ThreadPoolExecutor

    tower = minilm.doc_engine.tower
    texts = [f"{i} " + TEXTS[i % len(TEXTS)] for i in range(2500)]  # above the 2,048-text threshold for splitting
    with ThreadPoolExecutor(3) as executor:
        threaded = tower.tokenize(texts, executor, 3)
    assert threaded == tower.tokenize(texts)
    assert threaded == [
        list(ids) for ids in tower.tokenizer(texts, truncation=True, max_length=tower.max_length)["input_ids"]
    ]


@pytest.mark.parametrize("scale", [None, 0.125, 0.3])
@pytest.mark.parametrize("with_scale_argument", [True, False])
def test_torch_varlen_adapter_applies_the_scale_on_every_signature(scale, with_scale_argument):
    """torch 2.10's varlen_attn has no ``scale``; the adapter folds it into the queries. Checked against
    per-sequence SDPA with the wanted scale, using a stand-in kernel of either signature (the real one
    needs CUDA)."""
    from mtrbench.encode.varlen import _reference, adapt_torch_varlen

    def kernel(q, k, v, cu_q, cu_k, max_q, max_k, **kwargs):
        assert torch.equal(cu_q, cu_k) and max_q == max_k == int((cu_q[1:] - cu_q[:-1]).max())
        return _reference(q, k, v, cu_q, kwargs.get("scale"))  # scale None: SDPA's 1/sqrt(head_dim)

    if with_scale_argument:

        def varlen_attn(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, *, return_aux=None, scale=None):
            return kernel(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, scale=scale)
    else:

        def varlen_attn(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, is_causal=False, return_aux=None):
            return kernel(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k)

    torch.manual_seed(0)
    lengths = [3, 7, 1, 5]
    cu = torch.tensor([0, *np.cumsum(lengths)], dtype=torch.int32)
    q, k, v = (torch.randn(sum(lengths), 4, 16) for _ in range(3))
    ours = adapt_torch_varlen(varlen_attn)(q, k, v, cu, max(lengths), scale)
    wanted = scale if scale is not None else 16**-0.5
    for start, end in zip(cu[:-1].tolist(), cu[1:].tolist()):
        expected = torch.softmax(
            q[start:end].transpose(0, 1) @ k[start:end].transpose(0, 1).transpose(1, 2) * wanted, dim=-1
        ) @ v[start:end].transpose(0, 1)
        torch.testing.assert_close(ours[start:end], expected.transpose(0, 1), atol=1e-5, rtol=1e-5)
