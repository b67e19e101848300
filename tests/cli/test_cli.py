"""The command line as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import pytrec_eval
from cli_run import run_cli

from mtrbench.data import load_task
from mtrbench.formats.run import read_run


def mtrbench(*args, env=None, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "mtrbench.cli", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


@pytest.mark.slow
def test_unavailable_hub_model_is_one_line_error(shared):
    proc = mtrbench(
        "eval",
        "--model",
        "bge-large",
        "--task",
        str(shared / "datasets/fixtures/beir/mini"),
        "--output-dir",
        "/nonexistent-never-written",
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert "BAAI/bge-large-en-v1.5" in errors[0] and "--model DIR" in errors[0]


@pytest.mark.parametrize(
    "args,needle",
    [
        (["eval", "--model", "bge-larg"], "Did you mean: bge-large"),
        (["eval", "--task", "mtrbench-sampl"], "Did you mean: mtrbench-sample"),
        (["eval", "--history", "fulll"], "unknown history strategy 'fulll'"),
        (["score", "--run", "/no/such.run", "--qrels", "/no/such.qrels"], "does not exist"),
        (["eval", "--model", "stella-400m"], "--trust-remote-code"),
    ],
)
def test_user_errors_have_no_traceback(args, needle):
    proc = mtrbench(*args)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and needle in proc.stderr


@pytest.mark.slow
def test_tasks_and_models_listing():
    proc = mtrbench("tasks")
    assert proc.returncode == 0 and "mtrbench-sample" in proc.stdout
    proc = mtrbench("tasks", "show", "mtrbench-sample")
    assert proc.returncode == 0 and "main_score: ndcg_at_10" in proc.stdout
    proc = mtrbench("models")
    assert proc.returncode == 0 and "bge-large" in proc.stdout and "passage: " in proc.stdout


@pytest.mark.slow
def test_eval_writes_mteb_layout_and_scores_match_pytrec_eval(native_mini, tmp_path):
    proc = run_cli(
        "eval", "--task", str(native_mini), "--history", "current,full", "--output-dir", str(tmp_path), "--quiet"
    )
    assert proc.returncode == 0, proc.stderr
    base = tmp_path / "sentence-transformers__all-MiniLM-L6-v2"
    revision_dirs = list(base.iterdir())
    assert len(revision_dirs) == 1
    full = revision_dirs[0] / "native-mini.json"
    current = revision_dirs[0] / "experiments" / "history=current" / "native-mini.json"
    for path in (full, current):
        doc = json.loads(path.read_text())
        assert doc["task_name"] == "native-mini"
        split = doc["scores"]["test"][0]
        assert split["main_score"] == split["ndcg_at_10"]
        meta = doc["mtrbench"]
        assert meta["queries"] == {"total": 5, "evaluated": 4, "excluded_without_positives": 1}
        assert meta["settings"]["truncate"] == "left"
        assert set(meta["breakdowns"]["turn"]) == {"1", "2", "3", "4"}
        assert set(meta["breakdowns"]["topic_switch"]) == {"before_switch", "after_switch"}
        # re-score the written run independently
        run = read_run(path.with_name("native-mini.run.trec"))
        qrels = load_task(str(native_mini)).qrels()
        qrels = {q: d for q, d in qrels.items() if any(g > 0 for g in d.values())}
        direct = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.10"}).evaluate(
            {q: run.get(q, {}) for q in qrels}
        )
        assert split["ndcg_at_10"] == pytest.approx(sum(v["ndcg_cut_10"] for v in direct.values()) / len(direct))
        assert split["recall_at_10"] == pytest.approx(sum(v["recall_10"] for v in direct.values()) / len(direct))
        per_query = [
            json.loads(line) for line in path.with_name("native-mini.per_query.jsonl").read_text().splitlines()
        ]
        assert {row["qid"] for row in per_query} == set(qrels)
    assert json.loads(full.read_text())["mtrbench"]["settings"]["history"] == "full"
    assert json.loads(current.read_text())["mtrbench"]["settings"]["history"] == "current"


def test_bm25_runs(native_mini, tmp_path):
    proc = mtrbench(
        "eval",
        "--model",
        "bm25",
        "--task",
        str(native_mini),
        "--history",
        "rewrite",
        "--output-dir",
        str(tmp_path),
        "--quiet",
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(next(tmp_path.rglob("native-mini.json")).read_text())
    # rewrites name the entity and the aspect: BM25 finds every gold passage in the top 3
    assert doc["scores"]["test"][0]["recall_at_3"] == pytest.approx((1 + 1 + 1 + 1) / 4)
