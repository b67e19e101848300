"""`mtrbench score --predictions`: an MTRAGEval Task A prediction file scored as MTRAG's retrieval script scores it.

Constructed so each convention moves the numbers, with the values worked by hand:

- fiqa ``q1``: relevant d1, d2; contexts q1 (the query's own id, dropped), d3, d1 -> ranking d3, d1:
  nDCG@5 = (1/log2 3) / (1 + 1/log2 3) = 0.386853, R@5 = 1/2.
- fiqa ``q2``: relevant d5, ranked first: nDCG@5 = 1, R@5 = 1.
- fiqa ``q3``: judged, not predicted: skipped (not a 0).
- govt ``q4``: relevant g1, ranked second: nDCG@5 = 1/log2 3 = 0.630930, R@5 = 1.
fiqa mean nDCG@5 = 0.693426; "all" weights by predictions (2 and 1): (2 * 0.693426 + 0.630930) / 3 = 0.672594.
"""

from __future__ import annotations

import json
import math

import pytest

from mtrbench.cli import main

LOG3 = 1 / math.log2(3)
Q1_NDCG5 = LOG3 / (1 + LOG3)


def _context(doc: str, score: float) -> dict:
    return {"document_id": doc, "score": score}


@pytest.fixture()
def prediction_file(tmp_path):
    qrels = tmp_path / "qrels"
    qrels.mkdir()
    (qrels / "fiqa.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t1\nq2\td5\t1\nq3\td9\t1\n")
    (qrels / "govt.tsv").write_text("query-id\tcorpus-id\tscore\nq4\tg1\t1\n")
    rows = [
        {"task_id": "q1", "Collection": "fiqa", "contexts": [_context("q1", 9), _context("d3", 3), _context("d1", 2)]},
        {"task_id": "q2", "Collection": "fiqa", "contexts": [_context("d5", 1)]},
        {
            "task_id": "q4",
            "Collection": "mt-rag-govt-elser-512-100-20240611",
            "contexts": [_context("g2", 2), _context("g1", 1)],
        },
    ]
    path = tmp_path / "taska.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, qrels


def test_rows_per_collection_and_the_weighted_all_row(prediction_file, tmp_path):
    path, qrels = prediction_file
    output = tmp_path / "scores.json"
    assert main(["score", "--predictions", str(path), "--data-dir", str(qrels), "--output", str(output)]) == 0
    document = json.loads(output.read_text())
    assert document["protocol"].startswith("official")
    rows = document["collections"]
    assert list(rows) == ["fiqa", "mt-rag-govt-elser-512-100-20240611", "all"]
    assert [rows[c]["predictions"] for c in rows] == [2, 1, 3]
    fiqa = (Q1_NDCG5 + 1) / 2
    assert rows["fiqa"]["scores"]["ndcg_at_5"] == pytest.approx(fiqa, abs=1e-5)
    assert rows["fiqa"]["scores"]["recall_at_5"] == pytest.approx(0.75, abs=1e-5)
    assert rows["mt-rag-govt-elser-512-100-20240611"]["scores"]["ndcg_at_5"] == pytest.approx(LOG3, abs=1e-5)
    assert rows["all"]["scores"]["ndcg_at_5"] == pytest.approx((2 * fiqa + LOG3) / 3, abs=1e-5)
    assert rows["all"]["scores"]["recall_at_5"] == pytest.approx((2 * 0.75 + 1) / 3, abs=1e-5)
    assert set(rows["all"]["scores"]) == {f"{m}_at_{k}" for m in ("ndcg", "recall") for k in (1, 3, 5, 10)}


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--protocol", "trec_eval"], "official:mtrag"),
        (["--qrels", "x.tsv"], "--data-dir"),
        (["--per-query"], "apply to --run"),
        (["--relevance-level", "2"], "--relevance-level 2"),  # MTRAG's script counts grade >= 1
    ],
)
def test_misuse_is_one_error_line(prediction_file, capsys, extra, message):
    path, qrels = prediction_file
    assert main(["score", "--predictions", str(path), "--data-dir", str(qrels), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and message in err[0]


def test_predictions_need_the_qrels_folder(prediction_file, capsys):
    path, _ = prediction_file
    assert main(["score", "--predictions", str(path)]) == 2
    assert "--data-dir" in capsys.readouterr().err


def test_run_without_qrels_is_an_error(tmp_path, capsys):
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 d1 1 1.0 m\n")
    assert main(["score", "--run", str(run)]) == 2
    assert "--qrels FILE or --task NAME" in capsys.readouterr().err


@pytest.mark.parametrize("data_dir", [".", "mtragun-human", "mtragun-human/retrieval_tasks"])
def test_a_clone_with_both_releases_scores_mtrag_un_ids_against_mtrag_un_qrels(prediction_file, tmp_path, data_dir):
    """A full clone holds MTRAG's dev qrels (found first) and MTRAG-UN's, with other task ids: a file of MTRAG-UN
    tasks is scored against MTRAG-UN's qrels (the hand values above), from the clone, its mtragun-human folder or
    that folder's retrieval_tasks. Taking the first file found would judge none of its tasks (exit 2)."""
    path, qrels = prediction_file
    clone = tmp_path / "clone"
    for domain in ("fiqa", "govt"):
        mtrag = clone / "mtrag-human" / "retrieval_tasks" / domain / "qrels" / "dev.tsv"
        mtrag.parent.mkdir(parents=True)
        mtrag.write_text("query-id\tcorpus-id\tscore\nother-task\td1\t1\n")
        un = clone / "mtragun-human" / "retrieval_tasks" / "qrels" / f"{domain}.tsv"
        un.parent.mkdir(parents=True, exist_ok=True)
        un.write_text((qrels / f"{domain}.tsv").read_text())
    output = tmp_path / "scores.json"
    assert (
        main(["score", "--predictions", str(path), "--data-dir", str(clone / data_dir), "--output", str(output)]) == 0
    )
    rows = json.loads(output.read_text())["collections"]
    assert rows["all"]["scores"]["ndcg_at_5"] == pytest.approx((2 * (Q1_NDCG5 + 1) / 2 + LOG3) / 3, abs=1e-5)
