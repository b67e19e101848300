"""Static-shape packed batches (--engine-mode static / fused): their arrays by hand, the engine's vectors against
sentence-transformers' and the eager engine's, the carry-over of partly filled batches, compiled blocks, and every
fallback with its reason. CUDA graphs themselves need a GPU (benchmarks/encode_throughput.py); here the runner's
CPU answer is checked."""

from __future__ import annotations

import logging
import random

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mtrbench.encode.batching import Ragged, packed_arrays, plan_batches, static_arrays
from mtrbench.encode.engine import STATIC_GRANULARITY, EncodingEngine, EngineOptions, _Batch, _unstatic
from mtrbench.encode.fusion import activation_name, unfuse_blocks
from mtrbench.encode.static import GraphRunner
from mtrbench.encode.towers import SentenceTransformerTower

# -- arrays --------------------------------------------------------------------------------------------


def _tokens(lengths):
    ids, start = [], 1
    for n in lengths:
        ids.append(list(range(start, start + n)))
        start += n
    return Ragged.from_lists(ids)


def test_static_arrays_by_hand():
    tokens = _tokens([3, 5, 2])  # ids 1..10
    batch = static_arrays(tokens, np.array([0, 1, 2]), total_tokens=24, granularity=4, pad_id=0)
    # 10 real tokens, 14 spare: one filler of 14 (under the 128 bound) makes 4 sequences, a multiple of 4
    assert batch.cu_seqlens.tolist() == [0, 3, 8, 10, 24]
    assert batch.input_ids.tolist() == [list(range(1, 11)) + [0] * 14]
    assert batch.position_ids.tolist() == [[0, 1, 2, 0, 1, 2, 3, 4, 0, 1, *range(14)]]
    assert (batch.real, batch.used, batch.max_length) == (3, 10, 128)

    # granularity 8: 3 real + 5 fillers sharing the 14 spare tokens as evenly as possible (3, 3, 3, 3, 2)
    batch = static_arrays(tokens, np.array([2, 0, 1]), total_tokens=24, granularity=8, pad_id=9, position_offset=2)
    assert batch.cu_seqlens.tolist() == [0, 2, 5, 10, 13, 16, 19, 22, 24]
    assert batch.input_ids[0, :10].tolist() == [9, 10, 1, 2, 3, 4, 5, 6, 7, 8]
    assert batch.input_ids[0, 10:].tolist() == [9] * 14
    assert batch.position_ids[0, :5].tolist() == [2, 3, 2, 3, 4]  # RoBERTa-style positions start at 2

    with pytest.raises(ValueError, match="spare"):
        static_arrays(tokens, np.array([0, 1, 2]), total_tokens=13, granularity=4, pad_id=0)


def test_static_arrays_invariants_on_random_batches():
    rng = random.Random(7)
    for _ in range(300):
        lengths = [rng.randint(1, 300) for _ in range(rng.randint(1, 40))]
        granularity = rng.choice([1, 8, 32])
        total = sum(lengths) + granularity + rng.randint(0, 3000)
        limit = rng.choice([None, 300, 512])
        tokens = _tokens(lengths)
        rows = np.array(rng.sample(range(len(lengths)), len(lengths)))
        batch = static_arrays(tokens, rows, total, granularity, pad_id=0, position_limit=limit)
        cu = batch.cu_seqlens.astype(np.int64)
        sizes = np.diff(cu)
        assert cu[-1] == total == batch.input_ids.shape[1] == batch.position_ids.shape[1]
        assert len(sizes) % granularity == 0
        assert sizes.min() >= 1  # no zero-length filler: pooling would index past the end
        assert sizes.max() <= batch.max_length and (limit is None or batch.max_length <= limit)
        # the real sequences come first, exactly as a packed batch of the same rows
        ids, positions, packed_cu, _ = packed_arrays(tokens, rows)
        assert batch.cu_seqlens[: batch.real + 1].tolist() == packed_cu.tolist()
        assert batch.input_ids[0, : batch.used].tolist() == ids[0].tolist()
        # every sequence, fillers included, counts its positions from 0
        starts = np.repeat(cu[:-1], sizes)
        assert (batch.position_ids[0] == np.arange(total) - starts).all()


def test_unstatic_gives_back_the_packed_batch():
    tokens = _tokens([4, 7, 1])
    rows = np.array([1, 2, 0])
    batch = static_arrays(tokens, rows, total_tokens=64, granularity=8, pad_id=0)
    plain = _unstatic(_Batch(np.array([5, 6, 7]), batch.tensors(), 64))
    ids, positions, cu, longest = packed_arrays(tokens, rows)
    assert plain.tensors["input_ids"].tolist() == ids.tolist()
    assert plain.tensors["position_ids"].tolist() == positions.tolist()
    assert plain.tensors["cu_seq_lens_q"].tolist() == cu.tolist()
    assert plain.tensors["max_length_q"] == longest == 7 and plain.tokens == 12
    assert plain.positions.tolist() == [5, 6, 7]


def test_unsorted_plan_keeps_input_order():
    lengths = [5, 50, 20, 20, 3, 120]
    # input order: 5+50+20+20 = 95, +3 = 98 fits 100; then 120 alone
    assert [b.tolist() for b in plan_batches(lengths, 100, packed=True, sort=False)] == [[0, 1, 2, 3, 4], [5]]
    assert [b.tolist() for b in plan_batches(lengths, 60, packed=True, sort=False)] == [[0, 1], [2, 3, 4], [5]]
    with pytest.raises(ValueError, match="packed"):
        plan_batches(lengths, 100, sort=False)


def test_ragged_take_and_concat():
    a = _tokens([2, 3])  # [1, 2] [3, 4, 5]
    b = Ragged.from_lists([[9], [], [7, 8]])
    joined = Ragged.concat([a.take(np.array([1, 0])), b])
    assert joined.rows(np.arange(len(joined))) == [[3, 4, 5], [1, 2], [9], [], [7, 8]]
    assert joined.offsets.tolist() == [0, 3, 5, 6, 6, 8]


# -- the engine on MiniLM (fp32, CPU) -------------------------------------------------------------------


@pytest.fixture
def fresh_tower(minilm):
    """A tower over the shared MiniLM model, whose attention and blocks are restored afterwards."""
    model = minilm.model
    yield SentenceTransformerTower(model, minilm.doc_engine.tower.spec)
    unfuse_blocks(model[0].auto_model)
    model[0].auto_model.set_attn_implementation("sdpa")


def _texts(tokenizer, n, tokens, seed=0):
    """Distinct texts of exactly ``tokens`` tokens each ([CLS], one-token words, [SEP])."""
    words = [w for w in tokenizer.get_vocab() if w.isalpha() and w.isascii() and len(w) > 2][:2000]
    rng = random.Random(seed)
    texts = [" ".join(rng.choice(words) for _ in range(tokens - 2)) for _ in range(n)]
    assert {len(ids) for ids in tokenizer(texts)["input_ids"]} == {tokens}
    return texts


def _cos(a, b):
    return F.cosine_similarity(a.float(), b.float(), dim=-1)


def test_static_engine_carries_partial_batches_and_equals_eager(minilm, fresh_tower):
    texts = _texts(minilm.tokenizer, 400, 10)
    # Windows of 256 and 144 texts. Budget 320 - 32 spare = 288 tokens = 28 texts a batch. Window 1: 9 full
    # batches and 4 texts (14 % < 80 %), carried into window 2: 148 texts = 5 full batches and 8 texts (28 %),
    # the chunk's end, which run eagerly. Without the carry: 9 + 5 static batches and 2 others.
    engine = EncodingEngine(fresh_tower, EngineOptions(unpad="on", token_budget=320, mode="static"))
    assert engine.static and engine.settings()["mode"] == "static"
    assert engine.settings()["cuda_graphs_reason"] == "CUDA graphs need a CUDA device"
    ours = engine.encode(texts, normalize=True)
    assert engine.batches == {"static": 14, "other": 1}
    reference = minilm.model.encode(texts, convert_to_tensor=True, normalize_embeddings=True).float()
    assert _cos(ours, reference).min() >= 0.9999
    # rows land where their texts were: a shuffled input gives the same vectors, shuffled
    order = list(range(len(texts)))
    random.Random(1).shuffle(order)
    again = engine.encode([texts[i] for i in order], normalize=True)
    assert _cos(again, ours[order]).min() >= 0.99999
    assert _cos(ours[0], ours[1]) < 0.99  # distinct texts, so a permutation would have shown


def test_static_engine_on_mixed_lengths_equals_sentence_transformers(minilm, fresh_tower):
    texts = ["", "bridge", "lake " * 400, "The char lives only in Lake Varnholm. " * 12, "a b c"] * 12
    engine = EncodingEngine(fresh_tower, EngineOptions(unpad="on", token_budget=2048, mode="static"))
    ours = engine.encode(texts, prompt="query: ", normalize=True)
    assert engine.batches["static"] > 0
    reference = minilm.model.encode(texts, prompt="query: ", convert_to_tensor=True, normalize_embeddings=True)
    assert _cos(ours, reference).min() >= 0.9999


@pytest.mark.slow
def test_fused_engine_compiles_the_blocks_and_agrees(minilm, fresh_tower):
    engine = EncodingEngine(fresh_tower, EngineOptions(unpad="on", token_budget=1024, mode="fused"))
    model = fresh_tower.transformer()
    routed = [m for m in model.modules() if "forward" in vars(m)]
    # MiniLM-L6: per layer the attention output block, the intermediate block and the output block
    assert engine.settings()["mode"] == "fused" and len(routed) == 3 * 6
    assert engine.static_agreement >= 0.9999
    texts = _texts(minilm.tokenizer, 120, 30, seed=3)
    ours = engine.encode(texts, normalize=True)
    assert engine.batches["static"] == 3  # 120 texts: 3 full batches of 33, then 21 (63 %) at the chunk's end
    reference = minilm.model.encode(texts, convert_to_tensor=True, normalize_embeddings=True).float()
    assert _cos(ours, reference).min() >= 0.9999
    unfuse_blocks(model)
    assert not [m for m in model.modules() if "forward" in vars(m)]


def test_activation_name_is_found_by_evaluation():
    from transformers.activations import ACT2FN

    assert activation_name(ACT2FN["gelu"]) == "gelu"
    assert activation_name(ACT2FN["gelu_new"]) == "gelu_tanh"
    assert activation_name(torch.nn.SiLU()) == "silu"
    assert activation_name(torch.nn.ReLU()) == "relu"
    assert activation_name(lambda x: 2 * x) is None
    assert activation_name(ACT2FN["quick_gelu"]) is None  # x * sigmoid(1.702 x): close to GELU, not within 1e-6
    assert activation_name("not callable") is None


# -- fallbacks -----------------------------------------------------------------------------------------


def test_static_needs_packed_batches(minilm, fresh_tower, caplog):
    with caplog.at_level(logging.WARNING, logger="mtrbench.encode.engine"):
        engine = EncodingEngine(fresh_tower, EngineOptions(unpad="off", mode="static"))
    assert not engine.static and "pads" in engine.static_reason
    settings = engine.settings()
    assert settings["mode"] == "eager" and settings["mode_asked"] == "static" and "pads" in settings["mode_reason"]
    assert "--engine-mode static not used" in caplog.text


def test_static_needs_a_budget_above_the_model_length(minilm, fresh_tower):
    engine = EncodingEngine(fresh_tower, EngineOptions(unpad="on", token_budget=200, mode="static"))
    assert not engine.static and "under the model's 256 tokens + 32" in engine.static_reason


def test_an_eager_retriever_records_no_engine_mode(minilm):
    assert "engine_mode" not in minilm.settings() and minilm.settings()["packed"] is False


def test_auto_is_eager_on_cpu_and_says_nothing(minilm, fresh_tower, caplog):
    with caplog.at_level(logging.INFO, logger="mtrbench.encode.engine"):
        engine = EncodingEngine(fresh_tower, EngineOptions(unpad="on", token_budget=1024))
    assert engine.options.mode == "auto" and not engine.static and engine.static_reason is None
    assert engine.settings()["mode"] == "eager" and "mode_asked" not in engine.settings()
    assert "engine-mode" not in caplog.text


def test_a_disagreeing_static_path_falls_back_fused_then_static_then_eager(minilm, fresh_tower, monkeypatch, caplog):
    real = fresh_tower.forward_static
    monkeypatch.setattr(fresh_tower, "forward_static", lambda tensors, states: -real(tensors, states))
    with caplog.at_level(logging.WARNING, logger="mtrbench.encode.engine"):
        engine = EncodingEngine(fresh_tower, EngineOptions(unpad="on", token_budget=1024, mode="fused"))
    assert not engine.static and engine._runner is None
    reason = engine.static_reason
    assert "fused: disagrees with eager batches on probe texts (min cosine -1.00000)" in reason
    assert "static: disagrees" in reason and "eager batches instead" in caplog.text
    assert not [m for m in fresh_tower.transformer().modules() if "forward" in vars(m)]  # blocks given back
    texts = ["one", "two words", "three little words"]
    reference = minilm.model.encode(texts, convert_to_tensor=True, normalize_embeddings=True)
    assert _cos(engine.encode(texts, normalize=True), reference).min() >= 0.9999


def test_a_failing_probe_falls_back_with_its_error(minilm, fresh_tower, monkeypatch):
    def broken(tensors, states):
        raise RuntimeError("kernel says no\nsecond line")

    monkeypatch.setattr(fresh_tower, "forward_static", broken)
    engine = EncodingEngine(fresh_tower, EngineOptions(unpad="on", token_budget=1024, mode="static"))
    assert engine.static_reason == "static: failed on probe texts (RuntimeError: kernel says no)"


def test_out_of_memory_on_a_static_batch_splits_its_real_sequences(minilm, fresh_tower, monkeypatch):
    engine = EncodingEngine(fresh_tower, EngineOptions(unpad="on", token_budget=1024, mode="static"))

    def no_memory(tensors, states):
        raise torch.cuda.OutOfMemoryError("simulated")

    monkeypatch.setattr(fresh_tower, "forward_static", no_memory)
    texts = _texts(minilm.tokenizer, 40, 30, seed=5)
    ours = engine.encode(texts, normalize=True)
    reference = minilm.model.encode(texts, convert_to_tensor=True, normalize_embeddings=True).float()
    assert _cos(ours, reference).min() >= 0.9999
    assert engine.batches["static"] == 1  # 33 texts tried static, then run from their plain packed batch


def test_graph_runner_without_cuda_runs_the_states_itself():
    calls = []
    runner = GraphRunner(lambda t: calls.append(t) or torch.ones(1, 4, 2), torch.device("cpu"), use_graphs=True)
    assert runner.reason == "CUDA graphs need a CUDA device" and not runner.use_graphs
    out = runner({"input_ids": torch.zeros(1, 4)})
    assert out.shape == (1, 4, 2) and len(calls) == 1 and runner.graphs == 0


def test_engine_mode_reaches_the_engine_through_retriever_options():
    from mtrbench.retrieve import build_retriever

    retriever = build_retriever(
        "minilm",
        device="cpu",
        show_progress=False,
        use_cache=False,
        unpad="on",
        token_budget=1024,
        engine_mode="static",
    )
    try:
        assert retriever.doc_engine.static and retriever.doc_engine.settings()["mode"] == "static"
        # recorded in the result's retriever block when not eager (older results and CPU runs are eager)
        assert retriever.settings()["engine_mode"] == "static"
        assert STATIC_GRANULARITY == 32
    finally:
        retriever.model[0].auto_model.set_attn_implementation("sdpa")
