"""`eval --history all` after `full` had finished: the finished history is a row of the table, its numbers read
from its result file, in the order of the histories (not only a `note:`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from mtrbench.cli import main

NATIVE_MINI = Path(__file__).resolve().parents[1] / "data" / "native-mini"


def table_rows(out: str) -> dict[str, str]:
    """history -> its nDCG@10 cell, from the strategies table (the first table printed)."""
    rows: dict[str, str] = {}
    for line in out.splitlines():
        if line.startswith("nDCG@10 by turn"):
            break
        match = re.match(r"^(\S+)\s+(\d\.\d{4})\s", line)
        if match:
            rows[match.group(1)] = match.group(2)
    return rows


def test_a_finished_history_is_shown_in_the_table_of_a_later_run(tmp_path, capsys):
    argv = ["eval", "-m", "bm25", "--task", str(NATIVE_MINI), "--output-dir", str(tmp_path), "--quiet"]
    assert main([*argv, "--history", "full"]) == 0
    capsys.readouterr()
    [finished] = tmp_path.rglob("native-mini.per_query.jsonl")
    values = [json.loads(line)["ndcg_at_10"] for line in finished.read_text().splitlines() if line.strip()]

    assert main([*argv, "--history", "all"]) == 0
    captured = capsys.readouterr()
    assert "note: skipped bm25 on native-mini (history full)" in captured.err
    rows = table_rows(captured.out)
    assert list(rows)[:3] == ["current", "full", "window:5"]
    assert rows["full"] == f"{sum(values) / len(values):.4f}"
    assert len(rows) == 6
