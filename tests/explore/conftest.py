"""Fixtures of the explorer tests: the site of the sample's six BM25 history strategies, and a small site on a copy
of the sample with an injected passage, holding a truncated dense result and a `mtrbench rag` result."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from explore_support import INJECTED_DOC, INJECTION, KEY_ENV, LIMIT, MAX_LENGTH, ROOT, Rag
from llm_server import ScriptedChatServer

from mtrbench.cli import main


@pytest.fixture(scope="session")
def sample_site(sample_bm25_histories, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("explore-sample")
    assert main(["explore", str(sample_bm25_histories), "-o", str(out)]) == 0
    return out


@pytest.fixture(scope="session")
def injected_sample(tmp_path_factory) -> Path:
    """The sample's files with markup in one passage's title and text."""
    folder = tmp_path_factory.mktemp("injected") / "mtrbench-sample"
    shutil.copytree(ROOT / "tasks" / "mtrbench-sample", folder)
    corpus = folder / "corpus.jsonl"
    rows = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        if row["_id"] == INJECTED_DOC:
            row["title"] = f"{row['title']} {INJECTION}"
            row["text"] = f"{row['text']} {INJECTION}"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def small_results(injected_sample, tmp_path_factory) -> Path:
    """On the injected copy, first two conversations: `mtrbench rag` (BM25, history full, answers and verdicts),
    BM25 with history current, and a tiny dense model (history full, max length 48: truncated queries)."""
    from tiny_model import make_tiny_model

    out = tmp_path_factory.mktemp("explore-small")
    data = ["--data-dir", str(injected_sample), "--limit", LIMIT, "--output-dir", str(out), "--quiet"]
    mp = pytest.MonkeyPatch()
    mp.setenv(KEY_ENV, "sk-explore-test")
    try:
        with ScriptedChatServer(Rag(), with_headers=False) as server:
            args = ["rag", "--model", "bm25", "--history", "full", "--generator-model", "gen-m"]
            args += ["--generator-base-url", server.base_url, "--judge-model", "judge-m", "--api-key-env", KEY_ENV]
            assert main([*args, "--passages", "3", "--no-llm-cache", "--yes", *data]) == 0
    finally:
        mp.undo()
    assert main(["eval", "--model", "bm25", "--history", "current", *data]) == 0
    tiny = make_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny")
    assert main(["eval", "--model", str(tiny), "--history", "full", "--max-length", MAX_LENGTH, *data]) == 0
    return out


@pytest.fixture(scope="session")
def small_site(small_results, injected_sample, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("explore-small-site")
    assert main(["explore", str(small_results), "-o", str(out), "--data-dir", str(injected_sample)]) == 0
    return out
