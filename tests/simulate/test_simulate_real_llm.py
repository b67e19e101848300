"""The whole simulate path once against the real small model in-process (SmolLM2-135M-Instruct, ``hf://smollm2``)
as the simulated user and the UMBRELA judge, the system behind the HTTP contract on 127.0.0.1.

What the model says is its own: only what must hold for any model is asserted (counts, statuses, exit codes, and
that a rerun asks nothing again). Skipped with the reason where the [real-llm] extra is missing; slow."""

from __future__ import annotations

import json

import pytest
from contract_server import ContractServer
from real_llm import REAL_LLM_MARKS
from scripts import system_by_keyword

from mtrbench.cli import main

pytestmark = REAL_LLM_MARKS


@pytest.fixture
def asked(monkeypatch):
    """Requests that reach the model (no re-asks: --parse-retries 0)."""
    import torch

    from mtrbench.llm.hf import HFChatClient

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    counter = {"items": 0}
    original = HFChatClient.generate_ids

    def counting(self, requests, on_reply=None):
        counter["items"] += len(requests)
        return original(self, requests, on_reply)

    monkeypatch.setattr(HFChatClient, "generate_ids", counting)
    yield counter
    torch.set_num_threads(threads)


def test_simulate_run_and_score_with_smollm2(two_needs, tmp_path, asked, capsys):
    out = tmp_path / "run"
    common = ["--no-llm-cache", "--yes", "--quiet", "--parse-retries", "0", "--timeout", "600"]
    with ContractServer(system_by_keyword) as system:
        run = ["simulate", "run", "--task", str(two_needs), "--user-model", "smollm2", "--user-base-url",
               "hf://smollm2", "--max-tokens", "24", "--max-turns", "2", "--system-url", system.url,
               "--output-dir", str(out), *common]  # fmt: skip
        assert main([*run, "--max-failure-rate", "1"]) == 0, capsys.readouterr().err
        user_asked, system_asked = asked["items"], len(system.requests)
        records = [json.loads(line) for line in (out / "sessions.jsonl").read_text().splitlines()]
        assert [r["session_id"] for r in records] == ["lake", "bridge"]
        assert all(r["status"] in ("satisfied", "abandoned", "user_failed") for r in records)
        assert all(len(r["turns"]) <= 2 and all(t["ok"] for t in r["turns"]) for r in records)
        assert system_asked == sum(len(r["turns"]) for r in records)
        # one user request per turn the user took, plus the one that ended its session (none after a failure)
        assert user_asked == sum(len(r["turns"]) + (r["status"] != "user_failed") for r in records)
        asked["items"] = 0
        assert main([*run, "--max-failure-rate", "1"]) == 0
        assert asked["items"] == sum(r["status"] == "user_failed" for r in records)  # only failures asked again
        assert len(system.requests) == system_asked
    score = ["simulate", "score", str(out), "--k", "2", "--judge-model", "smollm2", "--judge-base-url",
             "hf://smollm2", *common]  # fmt: skip
    asked["items"] = 0
    code = main([*score, "--max-failure-rate", "1"])
    assert code == 0, capsys.readouterr().err
    body = json.loads((out / "score.json").read_text())
    labels = body["labels"]
    assert asked["items"] == labels["unjudged_pairs"] == labels["labelled"] + labels["failed"]
    assert body["summary"]["sessions"] == 2 and len(body["sessions"]) == 2
    assert main([*score, "--max-failure-rate", "0"]) == (1 if labels["failed"] else 0)
