"""`assess --method umbrela` once against the real small model in-process (SmolLM2-135M-Instruct, ``hf://smollm2``).

What it grades depends on the model, so only what must hold for any model is asserted: each pooled pair ends
either graded 0-3 (a qrels line and a sidecar entry) or failed (neither), the exit status follows the failure share
and the limit, and a rerun asks only the failed pairs (greedy decoding, no re-asks: the same replies). Skipped,
with the reason, where the [real-llm] extra is not installed; slow (the model converts and loads once)."""

from __future__ import annotations

import json

import pytest
from real_llm import REAL_LLM_MARKS

from mtrbench.cli import main

pytestmark = REAL_LLM_MARKS
# depth 1 of these two runs pools 3 pairs native-mini does not judge
RUNS = {
    "a.trec": ["c1_1 Q0 varn-depth 1 2 a", "c1_3 Q0 orrin-design 1 2 a", "c1_5 Q0 varn-depth 1 2 a"],
    "b.trec": ["c1_1 Q0 varn-fish 1 2 b", "c1_3 Q0 orrin-open 1 2 b"],
}
POOLED = {("c1_5", "varn-depth"), ("c1_1", "varn-fish"), ("c1_3", "orrin-open")}


@pytest.fixture
def asked(monkeypatch):
    """Items that reach the model (re-asks would be counted apart; there are none with parse_retries 0)."""
    import torch

    from mtrbench.llm.hf import HFChatClient

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a small model on a shared CPU: one thread is faster than two
    counter = {"items": 0}
    original = HFChatClient.generate_ids

    def counting(self, requests, on_reply=None):
        counter["items"] += len(requests)
        return original(self, requests, on_reply)

    monkeypatch.setattr(HFChatClient, "generate_ids", counting)
    yield counter
    torch.set_num_threads(threads)


def test_umbrela_with_smollm2(native_mini, tmp_path, asked, capsys):
    runs = []
    for name, lines in RUNS.items():
        (tmp_path / name).write_text("\n".join(lines) + "\n")
        runs.append(str(tmp_path / name))
    judges = tmp_path / "judges.yaml"
    judges.write_text(
        "judges:\n  - {name: smol, model: smollm2, base_url: 'hf://smollm2', max_tokens: 16, "
        "concurrency: 3, parse_retries: 0, timeout_s: 600}\n"
    )
    out = tmp_path / "out"
    args = ["assess", str(native_mini), "--method", "umbrela", "--runs", *runs, "--depth", "1"]
    args += ["--judges", str(judges), "--output-dir", str(out), "--no-llm-cache", "--yes", "--quiet"]
    code = main([*args, "--max-failure-rate", "0"])
    err = capsys.readouterr().err
    assert asked["items"] == 3
    sidecar = json.loads((out / "umbrela_qrels.trec.llm.json").read_text())
    graded = {(r["qid"], r["doc_id"]): r["grade"] for r in sidecar["llm_labels"]}
    assert set(graded) <= POOLED and all(g in (0, 1, 2, 3) for g in graded.values())
    failed = sidecar["counts"]["failed"]
    assert len(graded) + failed == 3
    qrels_lines = (out / "umbrela_qrels.trec").read_text().splitlines()
    assert len(qrels_lines) == 5 + len(graded)  # native-mini's five judgments, then the graded pairs
    assert code == (1 if failed else 0), err
    assert "Traceback" not in err
    asked["items"] = 0
    assert main([*args, "--max-failure-rate", "1"]) == 0
    assert asked["items"] == failed  # graded pairs are not asked again
