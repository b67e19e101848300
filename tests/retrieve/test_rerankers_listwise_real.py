"""The listwise reranker once against the real small chat model in-process (SmolLM2-135M-Instruct, ``hf://smollm2``,
the [real-llm] extra): whatever it answers, every window is asked once, each query's reranked documents are the
first stage's, and the exit status follows the share of windows that failed."""

from __future__ import annotations

import time

import pytest
from real_llm import REAL_LLM_MARKS

from mtrbench.cli import main
from mtrbench.formats.run import read_run
from mtrbench.llm.failure_rate import DEFAULT_MAX_FAILURE_RATE

pytestmark = REAL_LLM_MARKS


@pytest.fixture
def sent(monkeypatch):
    import torch

    from mtrbench.llm.hf import HFChatClient
    from mtrbench.llm.reask import is_repair_turn

    counter = {"items": 0, "requests": 0}
    original = HFChatClient.generate_ids

    def counting(self, requests, on_reply=None):
        counter["requests"] += len(requests)
        counter["items"] += sum(not is_repair_turn(r.messages[-1]) for r in requests)
        return original(self, requests, on_reply)

    monkeypatch.setattr(HFChatClient, "generate_ids", counting)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small matrix products: one thread is faster on a shared CPU
    yield counter
    torch.set_num_threads(threads)


def test_listwise_with_smollm2_asks_every_window_once(native_mini, tmp_path, sent, capsys):
    common = ["eval", "--model", "bm25", "--task", str(native_mini), "--history", "current", "--quiet"]
    assert main([*common, "--output-dir", str(tmp_path / "first")]) == 0
    first = read_run(next((tmp_path / "first").rglob("native-mini.run.trec")))
    start = time.perf_counter()
    code = main(
        [
            *common,
            "--output-dir",
            str(tmp_path / "lw"),
            "--rerank",
            "listwise:smollm2",
            "--reranker-base-url",
            "hf://smollm2",
            "--rerank-k",
            "4",
            "--rerank-window",
            "4",
            "--rerank-stride",
            "2",
            "--timeout",
            "600",
            "--yes",
            "--no-llm-cache",
        ]
    )
    err = capsys.readouterr().err
    with capsys.disabled():
        print(f"listwise smollm2: {sent['requests']} generations in {time.perf_counter() - start:.1f} s")
    windows = len(first)  # at most 4 documents per query: one window each
    assert sent["items"] == windows and "Traceback" not in err
    failed = sent["requests"] > sent["items"] and "windows failed" in err
    if code == 0:
        reranked = read_run(next((tmp_path / "lw").rglob("native-mini.run.trec")))
        assert {q: set(docs) for q, docs in reranked.items()} == {q: set(docs) for q, docs in first.items()}
    else:
        assert code == 1 and failed and f"of {windows} windows" in err
        assert DEFAULT_MAX_FAILURE_RATE < 1
