"""``hf://`` wherever a model is named: one load per process, judges files, the async adapter, per-row progress.

A tiny random-weight Llama (built offline, as in test_llm_hf) stands in for a chat model: what is checked is
plumbing, not what it says. Loads are counted at transformers' ``from_pretrained``; batches at the backend's
``generate_ids``; the per-row reporting is checked on hand-made token tables.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import torch
from tiny_model import make_tiny_chat_model

from mtrbench.infra.errors import ModelError
from mtrbench.llm.client import ChatRequest
from mtrbench.llm.config import JudgeConfig, load_judges
from mtrbench.llm.hf import HFChatClient, _Rows, forget_loaded_models, make_client
from mtrbench.llm.hf_async import AsyncHFClient, make_async_client


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return make_tiny_chat_model(tmp_path_factory.mktemp("tiny-chat"))


def judge(folder: Path, **overrides) -> JudgeConfig:
    return JudgeConfig(
        **{"name": "j", "model": "tiny", "base_url": f"hf://{folder}", "max_tokens": 4, "concurrency": 2, **overrides}
    )


def requests(n: int) -> list[ChatRequest]:
    return [
        ChatRequest(key=f"q{i}", messages=[{"role": "user", "content": f"question number {i} " * (i + 1)}])
        for i in range(n)
    ]


@pytest.fixture
def loads(monkeypatch) -> list[str]:
    import transformers

    forget_loaded_models()
    seen: list[str] = []
    original = transformers.AutoModelForCausalLM.from_pretrained

    def counting(*args, **kwargs):
        seen.append(str(args[0]))
        return original(*args, **kwargs)

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", counting)
    return seen


def test_clients_of_one_model_share_one_load(tiny_model, loads):
    """A rewriter, a generator and a judge (another temperature) on the same hf:// path: loaded once."""
    for name, temperature in (("rewriter", 0.0), ("generator", 0.0), ("judge", 0.5)):
        client = HFChatClient(judge(tiny_model, name=name, temperature=temperature), device="cpu")
        assert len(client.run(requests(1), show_progress=False)) == 1
    assert loads == [str(tiny_model)]


def test_a_judges_file_of_hf_judges_runs_in_process(tiny_model, tmp_path, loads):
    path = tmp_path / "judges.yaml"
    path.write_text(
        f"judges:\n  - {{name: a, model: tiny, base_url: 'hf://{tiny_model}', max_tokens: 3}}\n"
        f"  - {{name: b, model: tiny, base_url: 'hf://{tiny_model}', temperature: 0.7, max_tokens: 3}}\n"
    )
    ensemble = load_judges(path)
    clients = [make_client(j) for j in ensemble]
    assert [type(c) for c in clients] == [HFChatClient, HFChatClient]
    assert [type(make_async_client(j)) for j in ensemble] == [AsyncHFClient, AsyncHFClient]
    for client in clients:
        (result,) = client.run(requests(1), show_progress=False)
        assert result.ok and result.attempts == 1
    assert len(loads) == 1  # an ensemble of one model holds one copy of it


def test_async_adapter_answers_each_caller_with_its_own_reply(tiny_model, loads, monkeypatch):
    """Five callers at once, batches of at most two: each gets the reply the synchronous backend gives for
    its own request (greedy decoding), in at most three batches."""
    expected = {
        r.key: r.text for r in HFChatClient(judge(tiny_model), device="cpu").run(requests(5), show_progress=False)
    }
    batches: list[int] = []
    original = HFChatClient.generate_ids

    def counting(self, batch, on_reply=None):
        batches.append(len(batch))
        return original(self, batch, on_reply)

    monkeypatch.setattr(HFChatClient, "generate_ids", counting)
    client = AsyncHFClient(judge(tiny_model))

    async def ask_all():
        return await asyncio.gather(*(client.acomplete(r) for r in requests(5)))

    results = asyncio.run(ask_all())
    assert {r.key: r.text for r in results} == expected
    assert sum(batches) == 5 and max(batches) <= 2 and len(batches) == 3
    assert client.usage.requests == 5 and client.usage.items == 5
    assert len(loads) == 1  # the reference client's load, shared


def test_async_adapter_hands_a_load_error_to_every_caller(tmp_path):
    empty = tmp_path / "no-model"
    empty.mkdir()
    client = AsyncHFClient(judge(empty))

    async def ask_all():
        return await asyncio.gather(*(client.acomplete(r) for r in requests(3)), return_exceptions=True)

    outcomes = asyncio.run(asyncio.wait_for(ask_all(), timeout=60))
    assert len(outcomes) == 3 and all(isinstance(o, ModelError) for o in outcomes)


def test_rows_are_reported_the_step_they_end():
    """Prompt width 2, stop token 9: row 1 ends at the first new token, row 0 at the second, row 2 never (cut
    at the limit, reported after generate). Each row is reported once, with its tokens before the stop."""
    reported: list[tuple[int, list[int]]] = []
    rows = _Rows(2, {9}, lambda row, ids: reported.append((row, ids)))
    rows.step(torch.tensor([[1, 1], [1, 1], [1, 1]]))  # the prompt alone: nothing generated yet
    assert reported == []
    rows.step(torch.tensor([[1, 1, 5], [1, 1, 9], [1, 1, 6]]))
    assert reported == [(1, [])]
    rows.step(torch.tensor([[1, 1, 5, 9], [1, 1, 9, 9], [1, 1, 6, 7]]))
    assert reported == [(1, []), (0, [5])]
    final = rows.finish(torch.tensor([[1, 1, 5, 9, 9], [1, 1, 9, 9, 9], [1, 1, 6, 7, 8]]))
    assert final == [[5], [], [6, 7, 8]]
    assert reported == [(1, []), (0, [5]), (2, [6, 7, 8])]


def test_each_reply_is_handed_on_before_its_batch_ends(tiny_model, loads, monkeypatch):
    """on_result runs inside generate (from the per-step watcher) for rows that end early, after it for rows cut
    at the limit; every request gets exactly one result either way."""
    import transformers

    inside: list[bool] = []
    generating = [False]
    original = transformers.LlamaForCausalLM.generate

    def flagged(self, *args, **kwargs):
        generating[0] = True
        try:
            return original(self, *args, **kwargs)
        finally:
            generating[0] = False

    monkeypatch.setattr(transformers.LlamaForCausalLM, "generate", flagged)
    client = HFChatClient(judge(tiny_model, max_tokens=3, concurrency=4), device="cpu")
    results = client.run(requests(4), show_progress=False, on_result=lambda r: inside.append(generating[0]))
    assert len(results) == len(inside) == 4
    ids = client.generate_ids(requests(4))
    ended_early = sum(len(row) < 3 for row in ids)  # the same greedy rows: these stopped before the limit
    assert sum(inside) == ended_early


def test_an_hf_judge_in_a_judges_file_needs_no_model_name(tmp_path):
    path = tmp_path / "judges.json"
    path.write_text('{"judges": [{"name": "smol", "base_url": "hf://smollm2"}, {"base_url": "http://h/v1"}]}')
    with pytest.raises(Exception, match=r"judges\[1\]: missing required field 'model'"):
        load_judges(path)  # an HTTP judge still names its model
    path.write_text('{"judges": [{"name": "smol", "base_url": "hf://smollm2"}]}')
    (only,) = load_judges(path)
    assert (only.model, only.base_url) == ("smollm2", "hf://smollm2")
