"""`export`, `rag` and `audit` check the retriever's name before the task loads and use what that check resolved:
the name is resolved once per run (mtrbench.retrieve.registry.resolve_model, counted here), not checked, thrown
away and resolved again when the retriever is built."""

from __future__ import annotations

from collections import Counter

import pytest
from llm_server import Reply, ScriptedChatServer

from mtrbench.cli import main
from mtrbench.retrieve import builder

KEY_ENV = "MTRBENCH_RESOLVE_ONCE_TEST_KEY"


@pytest.fixture
def resolved(monkeypatch) -> Counter:
    """Model name -> how many times it was resolved."""
    counts: Counter = Counter()
    resolve_model = builder.resolve_model

    def counting(name: str, *args, **kwargs):
        counts[name] += 1
        return resolve_model(name, *args, **kwargs)

    monkeypatch.setattr(builder, "resolve_model", counting)
    return counts


def test_export_resolves_the_model_once(native_mini, tmp_path, resolved):
    out = tmp_path / "beir"
    assert main(["export", str(native_mini), "--format", "beir", "--out", str(out), "--model", "bm25"]) == 0
    assert (out / "queries.jsonl").is_file()
    assert resolved == Counter({"bm25": 1})


def test_rag_resolves_the_retriever_once(native_mini, tmp_path, monkeypatch, resolved):
    monkeypatch.chdir(tmp_path)
    with ScriptedChatServer(lambda body: Reply("an answer [1]")) as server:
        args = ["rag", "--model", "bm25", "--task", str(native_mini), "--output-dir", str(tmp_path / "results")]
        args += ["--generator-model", "gen-m", "--generator-base-url", server.base_url, "--api-key-env", KEY_ENV]
        assert main([*args, "--judge", "none", "--dry-run", "--quiet", "--no-llm-cache"]) == 0
        assert server.request_count == 0
    assert resolved == Counter({"bm25": 1})


def test_audit_resolves_the_negatives_retriever_once(native_mini, tmp_path, resolved):
    with ScriptedChatServer(lambda body: Reply("{}")) as server:
        args = ["audit", str(native_mini), "--dimensions", "completeness", "--negatives-model", "bm25"]
        args += ["--llm-model", "m", "--llm-base-url", server.base_url, "--output-dir", str(tmp_path / "audit")]
        assert main([*args, "--negatives", "2", "--dry-run", "--quiet", "--no-llm-cache"]) == 0
        assert server.request_count == 0
    assert resolved == Counter({"bm25": 1})
