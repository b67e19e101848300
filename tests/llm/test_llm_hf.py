"""The local Hugging Face chat backend (``hf://``) with a tiny random-weight Llama built offline.

Batched generation must equal one-prompt-at-a-time generation token for token (a right-padded or
unmasked batch changes the continuation), and ``mtrbench generate`` must write exactly what plain
transformers ``generate`` produces for each prompt.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from tiny_model import make_tiny_chat_model
from transformers import AutoModelForCausalLM, AutoTokenizer

from mtrbench.cli import main
from mtrbench.llm.client import ChatRequest
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.hf import HFChatClient

PROMPTS = [
    "hi",
    "how deep is lake varnholm in metres, and is it the deepest lake?",
    "who designed the bridge",
    "a b c d e f g h i j k l m n o p",
]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return make_tiny_chat_model(
        tmp_path_factory.mktemp("tiny-llama"), hidden=32, layers=2, heads=4, kv_heads=2, positions=512
    )


def judge(folder: Path, **overrides) -> JudgeConfig:
    return JudgeConfig(
        **{
            "name": "gen",
            "model": "tiny",
            "base_url": f"hf://{folder}",
            "max_tokens": 10,
            "concurrency": 4,
            **overrides,
        }
    )


def reference_ids(folder: Path, messages: list[dict], max_new_tokens: int) -> list[int]:
    """One prompt, no padding, plain transformers: what the backend must reproduce."""
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    ids = tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=tokenizer.pad_token_id,
        )
    new = out[0, ids.shape[1] :].tolist()
    stops = {tokenizer.sep_token_id, tokenizer.pad_token_id}
    return new[: next((i for i, t in enumerate(new) if t in stops), len(new))]


def test_batched_generation_equals_unbatched_token_for_token(tiny_model):
    client = HFChatClient(judge(tiny_model), device="cpu")
    requests = [ChatRequest(key=str(i), messages=[{"role": "user", "content": p}]) for i, p in enumerate(PROMPTS)]
    batched = client.generate_ids(requests)
    single = [client.generate_ids([r])[0] for r in requests]
    assert batched == single
    assert all(len(ids) > 0 for ids in batched)
    # the prompts differ in length, so the batch really was padded
    _, tokenizer = client._load()
    lengths = {
        len(
            tokenizer(
                tokenizer.apply_chat_template(r.messages, add_generation_prompt=True, tokenize=False),
                add_special_tokens=False,
            )["input_ids"]
        )
        for r in requests
    }
    assert len(lengths) == len(PROMPTS)
    assert single[1] == reference_ids(tiny_model, requests[1].messages, 10)


def test_right_padding_would_be_caught(tiny_model):
    """The equality above is sensitive: a right-padded batch gives other tokens for the short prompts."""
    client = HFChatClient(judge(tiny_model), device="cpu")
    requests = [ChatRequest(key=str(i), messages=[{"role": "user", "content": p}]) for i, p in enumerate(PROMPTS)]
    single = [client.generate_ids([r])[0] for r in requests]
    model, tokenizer = client._load()
    texts = [tokenizer.apply_chat_template(r.messages, add_generation_prompt=True, tokenize=False) for r in requests]
    tokenizer.padding_side = "right"
    batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            max_new_tokens=10,
            do_sample=False,
            pad_token_id=tokenizer.pad_token_id,
        )
    tokenizer.padding_side = "left"
    width = batch["input_ids"].shape[1]
    assert [row[: len(s)] for row, s in zip(out[:, width:].tolist(), single)] != single


def test_generate_runs_on_the_hf_backend(tiny_model, native_mini, tmp_path, capsys):
    out = tmp_path / "gen.jsonl"
    code = main(
        [
            "generate",
            "--task",
            str(native_mini),
            "--oracle",
            "--model",
            "tiny-llama",
            "--base-url",
            f"hf://{tiny_model}",
            "--max-tokens",
            "8",
            "--output",
            str(out),
            "--no-llm-cache",
            "--yes",
            "--quiet",
            "--concurrency",
            "3",
        ]
    )
    printed = capsys.readouterr()
    assert code == 0, printed.err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["qid"] for r in records) == ["c1_1", "c1_2", "c1_3", "c1_4"]
    assert "requests sent: 4" in printed.out
    # each answer is what plain transformers generates for that turn's prompt alone
    from mtrbench.data import load_task
    from mtrbench.generation.prompts import answer_messages, dialogue

    task = load_task(str(native_mini))
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    for record in records:
        q = next(q for q in task.queries if q.qid == record["qid"])
        passages = [task.corpus.document_text(task.corpus.position(d), "\n") for d in record["passages"]]
        messages = answer_messages("full", q.query, passages, dialogue(q.history))
        expected = tokenizer.decode(reference_ids(tiny_model, messages, 8), skip_special_tokens=True).strip()
        assert expected and record["answer"] == expected
        assert record["generator"] == "tiny-llama"


@pytest.mark.slow
def test_summary_on_the_same_hf_model_loads_it_once(tiny_model, native_mini, tmp_path, monkeypatch, capsys):
    import transformers

    from mtrbench.llm.hf import forget_loaded_models

    forget_loaded_models()  # models are kept per process: the module's earlier tests loaded this one
    loads = []
    original = transformers.AutoModelForCausalLM.from_pretrained

    def counting(*args, **kwargs):
        loads.append(args[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", counting)
    out = tmp_path / "gen.jsonl"
    code = main(
        [
            "generate",
            "--task",
            str(native_mini),
            "--oracle",
            "--history",
            "summary:llm",
            "--model",
            "tiny-llama",
            "--base-url",
            f"hf://{tiny_model}",
            "--max-tokens",
            "6",
            "--output",
            str(out),
            "--no-llm-cache",
            "--yes",
            "--quiet",
        ]
    )
    printed = capsys.readouterr()
    assert len(loads) == 1
    records = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    failures_path = tmp_path / "gen.failures.jsonl"
    failures = [json.loads(line) for line in failures_path.read_text().splitlines()] if failures_path.exists() else []
    # 4 turns with gold passages: each either generated (with its summary, first turn empty) or a counted failure
    assert sorted([r["qid"] for r in records] + [f["qid"] for f in failures]) == ["c1_1", "c1_2", "c1_3", "c1_4"]
    assert code == (1 if failures else 0), printed.err
    assert all(r["history_source"] == "llm:tiny-llama" for r in records)
    assert all(r["summary"] == "" for r in records if r["qid"] == "c1_1")
