"""Sweeps over hybrid settings: one result file per cell, the best cell marked."""

from __future__ import annotations

import json

import pytest

from mtrbench.cli import main


@pytest.mark.slow
def test_sweep_writes_one_result_per_cell_and_marks_the_best(tmp_path, capsys):
    assert (
        main(
            [
                "eval",
                "--model",
                "hybrid:minilm+bm25",
                "--alpha",
                "0.5,0.9",
                "--candidate-k",
                "20,50",
                "--history",
                "current",
                "--top-k",
                "20",
                "--k",
                "1,5,10,20",
                "--device",
                "cpu",
                "--quiet",
                "--output-dir",
                str(tmp_path),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    files = sorted(tmp_path.rglob("mtrbench-sample.json"))
    assert len(files) == 4
    cells = {}
    encoded = []
    for path in files:
        doc = json.loads(path.read_text())
        cache = doc["mtrbench"]["embedding_cache"]
        assert cache["texts_loaded"] + cache["texts_encoded"] == doc["mtrbench"]["corpus_size"]
        encoded.append(cache["texts_encoded"])
        retriever = doc["mtrbench"]["settings"]["retriever"]
        cells[(retriever["alpha"], retriever["candidate_k"])] = doc["scores"]["test"][0]["ndcg_at_10"]
        assert f"alpha={retriever['alpha']}" in str(path) and f"candk={retriever['candidate_k']}" in str(path)
    assert set(cells) == {(0.5, 20), (0.5, 50), (0.9, 20), (0.9, 50)}
    assert sum(n > 0 for n in encoded) <= 1  # the corpus is encoded once for the whole grid (or was cached)
    (alpha, k), best = max(cells.items(), key=lambda item: item[1])
    best_line = next(line for line in out.splitlines() if "<- best" in line)
    assert f"{best:.4f}" in best_line and str(k) in best_line and f"{alpha:g}" in best_line
    print({f"alpha={a} candk={c}": round(v, 4) for (a, c), v in sorted(cells.items())})
    # a re-run of the finished sweep evaluates nothing (no file rewritten) and still prints the whole table
    written = {path: path.stat().st_mtime_ns for path in files}
    assert (
        main(
            [
                "eval",
                "--model",
                "hybrid:minilm+bm25",
                "--alpha",
                "0.5,0.9",
                "--candidate-k",
                "20,50",
                "--history",
                "current",
                "--top-k",
                "20",
                "--k",
                "1,5,10,20",
                "--device",
                "cpu",
                "--quiet",
                "--output-dir",
                str(tmp_path),
            ]
        )
        == 0
    )
    printed = capsys.readouterr()
    again = printed.out
    assert "note: 4 of 4 results were finished and read back" in printed.err
    assert {path: path.stat().st_mtime_ns for path in files} == written
    assert next(line for line in again.splitlines() if "<- best" in line) == best_line
    assert sum(f"{v:.4f}" in again for v in cells.values()) == len(set(f"{v:.4f}" for v in cells.values()))


def test_sweep_needs_a_hybrid_model(tmp_path, capsys):
    assert main(["eval", "--model", "bm25", "--alpha", "0.5,0.9", "--output-dir", str(tmp_path)]) == 2
    assert "hybrid" in capsys.readouterr().err
