"""`mtrbench score --task NAME [--split S]` scores against the task's own qrels, as a qrels file of them would."""

from __future__ import annotations

import json
import random

import pytest
import pytrec_eval

from mtrbench.cli import main
from mtrbench.data import load_task


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    """A run that ranks, per sample query, a seeded shuffle of its judged documents and a few others."""
    task = load_task("mtrbench-sample", require_corpus=False)
    qrels = task.qrels()
    rng = random.Random(7)
    pool = sorted({d for rels in qrels.values() for d in rels})
    run: dict[str, dict[str, float]] = {}
    for qid, rels in qrels.items():
        docs = list(rels) + rng.sample(pool, 5)
        rng.shuffle(docs)
        run[qid] = {d: float(len(docs) - i) for i, d in enumerate(dict.fromkeys(docs))}
    folder = tmp_path_factory.mktemp("score_task")
    run_path = folder / "run.trec"
    run_path.write_text(
        "".join(f"{q} Q0 {d} {i + 1} {s} r\n" for q, docs in run.items() for i, (d, s) in enumerate(docs.items()))
    )
    return task, qrels, run, run_path


def test_task_qrels_give_pytrec_evals_numbers(sample_run, tmp_path):
    task, qrels, run, run_path = sample_run
    out = tmp_path / "scores.json"
    assert (
        main(
            [
                "score",
                "--run",
                str(run_path),
                "--task",
                "mtrbench-sample",
                "--metrics",
                "nDCG@10,R@5",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    document = json.loads(out.read_text())
    measured = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.5"}).evaluate(run)
    assert document["qrels"] == f"task mtrbench-sample ({task.split})"
    assert document["scores"]["ndcg_at_10"] == pytest.approx(
        sum(v["ndcg_cut_10"] for v in measured.values()) / len(measured), abs=1e-9
    )
    assert document["scores"]["recall_at_5"] == pytest.approx(
        sum(v["recall_5"] for v in measured.values()) / len(measured), abs=1e-9
    )


def test_task_and_an_explicit_qrels_file_agree(sample_run, tmp_path):
    _, qrels, _, run_path = sample_run
    qrels_path = tmp_path / "qrels.trec"
    qrels_path.write_text("".join(f"{q} 0 {d} {g}\n" for q, rels in qrels.items() for d, g in rels.items()))
    by_task, by_file = tmp_path / "task.json", tmp_path / "file.json"
    assert main(["score", "--run", str(run_path), "--task", "mtrbench-sample", "--output", str(by_task)]) == 0
    assert main(["score", "--run", str(run_path), "--qrels", str(qrels_path), "--output", str(by_file)]) == 0
    assert json.loads(by_task.read_text())["scores"] == json.loads(by_file.read_text())["scores"]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--qrels", "q.trec", "--task", "mtrbench-sample"], "not allowed with argument"),
        (["--qrels", "q.trec", "--split", "test"], "error: --split and --data-dir choose the task's qrels"),
        (["--task", "mtrbench-sample", "--split", "nosuch"], "error: task 'mtrbench-sample' has no split 'nosuch'"),
    ],
)
def test_bad_task_options_are_one_error_line(sample_run, extra, message, capsys):
    _, _, _, run_path = sample_run
    try:
        code = main(["score", "--run", str(run_path), *extra])
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code
    assert code == 2
    assert message in capsys.readouterr().err
