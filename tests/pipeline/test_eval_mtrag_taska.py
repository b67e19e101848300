"""MTRAGEval Task A from `mtrbench eval --mtrag-out FILE.jsonl`: BM25 on the real MTRAG-UN cloud card (its released
tasks and qrels, tests/data/mtragun) over a stand-in corpus of the tasks' reference passages (MTRAG's corpora are
Git LFS files), the first few conversations only (--limit).

Everything the file is checked against is read independently: the TREC run file eval wrote (plain lines, sorted
here into trec_eval's order: score descending, then document id descending), the released reference.jsonl (task
ids, order, conversation) and the JSON `mtrbench score --predictions` writes. One eval is shared by the module;
each test runs in a few seconds after it.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from mtrbench.cli import main
from mtrbench.formats.mtrag_eval import MAX_CONTEXTS, check_predictions

DATA = Path(__file__).resolve().parents[1] / "data" / "mtragun"
REFERENCE = DATA / "mtragun-human" / "generation_tasks" / "reference.jsonl.gz"
TASK, COLLECTION = "mtragun-cloud", "mt-rag-ibmcloud-elser-512-100-20240502"
LIMIT = 8  # conversations; MTRAG-UN has one task per conversation, and some of the first 8 have no qrels


def _cloud_tasks() -> list[dict]:
    rows = [json.loads(line) for line in gzip.open(REFERENCE, "rt", encoding="utf-8") if line.strip()]
    return [r for r in rows if r["Collection"] == "ibmcloud"]


def _eval(out: Path, corpus: Path, taska: Path, *extra: str) -> int:
    return main(
        [
            "eval",
            "--model",
            "bm25",
            "--task",
            TASK,
            "--data-dir",
            str(DATA),
            "--corpus",
            str(corpus),
            "--limit",
            str(LIMIT),
            "--output-dir",
            str(out),
            "--mtrag-out",
            str(taska),
            "--quiet",
            *extra,
        ]
    )


def _run(out: Path) -> dict[str, list[tuple[float, str]]]:
    """The .run.trec eval wrote, each query's documents in trec_eval's order."""
    (run_file,) = out.rglob("*.run.trec")
    run: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for line in run_file.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        run[qid].append((float(score), doc))
    return {qid: sorted(docs, reverse=True) for qid, docs in run.items()}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, dict[str, tuple[str, str]]]:
    passages = {c["document_id"]: (c.get("title") or "", c["text"]) for r in _cloud_tasks() for c in r["contexts"]}
    path = tmp_path_factory.mktemp("corpus") / "cloud.jsonl"
    path.write_text("".join(json.dumps({"_id": d, "title": t, "text": x}) + "\n" for d, (t, x) in passages.items()))
    return path, passages


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory, corpus) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("eval")
    out, taska = folder / "out", folder / "taska-cloud.jsonl"
    assert _eval(out, corpus[0], taska) == 0
    return out, taska


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_file_passes_the_taska_check_with_one_record_per_query_of_the_run(evaluated):
    """Catches: a record missing a required field or with more than 10 contexts (the checker's limit: eval's
    default --top-k is 100); one record per context instead of per query; queries without qrels left out (a
    submission answers every task; 'all' is weighted by predictions); --limit ignored; task ids respelled
    (`<::>` -> `::`) or in another order than the task's; the short `ibmcloud` collection name instead of the
    loader's MTRAG name; the conversation cut from `input`."""
    out, taska = evaluated
    report = check_predictions(taska, "retrieval_taska")
    assert report.problems == [] and report.warnings == []
    records = _records(taska)
    run = _run(out)
    assert len(records) == len(run) == LIMIT
    released = _cloud_tasks()[:LIMIT]
    assert [r["task_id"] for r in records] == [t["task_id"] for t in released]  # the released ids, in task order
    assert {r["task_id"] for r in records} == set(run)
    qrels = (DATA / "mtragun-human" / "retrieval_tasks" / "qrels" / "cloud.tsv").read_text()
    assert any(r["task_id"] not in qrels for r in records)  # unjudged tasks are written too
    for record, task in zip(records, released):
        assert record["Collection"] == COLLECTION
        assert record["conversation_id"] == task["conversation_id"]
        assert [(m["speaker"], m["text"]) for m in record["input"]] == [
            (m["speaker"], m["text"].strip()) for m in task["input"]
        ]
        assert 0 < len(record["contexts"]) <= MAX_CONTEXTS


def test_contexts_are_the_runs_documents_in_rank_order_with_its_scores(evaluated, corpus):
    """Catches: contexts in the run file's dictionary or document-id order instead of trec_eval's ranking (ties
    broken the other way); ranks or normalized values written as scores; fewer than the top 10 (the format's limit)
    when the run holds 100; text or title taken from another passage."""
    out, taska = evaluated
    run = _run(out)
    assert all(len(docs) > MAX_CONTEXTS for docs in run.values())  # eval retrieved past the format's limit
    for record in _records(taska):
        top = run[record["task_id"]][:MAX_CONTEXTS]
        assert [(c["score"], c["document_id"]) for c in record["contexts"]] == top
        assert [(c.get("title", ""), c["text"]) for c in record["contexts"]] == [corpus[1][d] for _, d in top]


def test_score_predictions_gives_the_eval_results_numbers(evaluated, tmp_path, capsys):
    """Round trip. Catches: task ids `score --predictions` cannot match to MTRAG-UN's qrels (it exits 2: 'answers
    none of the judged queries'); a collection name it does not know; contexts cut or reordered so nDCG/Recall at
    1..10 move; eval and the Task A file scoring different queries. The file holds one collection, so the "all"
    row (MTRAG's script weights collections by their number of predictions) is that collection's row; it is
    checked to be equal as well."""
    out, taska = evaluated
    capsys.readouterr()
    scores = tmp_path / "scores.json"
    assert main(["score", "--predictions", str(taska), "--data-dir", str(DATA), "--output", str(scores)]) == 0
    rows = json.loads(scores.read_text())["collections"]
    assert list(rows) == [COLLECTION, "all"] and rows[COLLECTION]["predictions"] == LIMIT
    (result_file,) = out.rglob(f"{TASK}.json")
    result = json.loads(result_file.read_text())
    assert result["mtrbench"]["settings"]["protocol"] == "official:mtrag"
    evaluated_scores = result["scores"]["dev"][0]
    keys = [f"{m}_at_{k}" for m in ("ndcg", "recall") for k in (1, 3, 5, 10)]
    assert evaluated_scores["ndcg_at_5"] > 0  # a retrieval that finds something: the comparison means something
    for row in (COLLECTION, "all"):
        assert {k: rows[row]["scores"][k] for k in keys} == pytest.approx(
            {k: evaluated_scores[k] for k in keys}, abs=1e-9
        )


def test_an_mtrag_card_round_trips_too(tmp_path, shared):
    """MTRAG (mtrag-govt, its released retrieval tasks; a stand-in corpus of the judged passages). Catches: task ids
    or the collection name of the mtrag loader's queries that `score --predictions` cannot match to MTRAG's
    published qrels (retrieval_tasks/govt/qrels/dev.tsv, ids `<conversation_id><::><turn>`)."""
    clone = shared / "datasets" / "real" / "mtrag"
    judged: dict[str, str] = {}
    for line in (clone / "retrieval_tasks" / "govt" / "qrels" / "dev.tsv").read_text().splitlines()[1:]:
        qid, doc, _ = line.split("\t")
        judged.setdefault(doc, qid)
    texts = {
        json.loads(line)["_id"]: json.loads(line)["text"]
        for line in (clone / "retrieval_tasks" / "govt" / "govt_lastturn.jsonl").read_text().splitlines()
    }
    corpus = tmp_path / "govt.jsonl"
    corpus.write_text(
        "".join(json.dumps({"_id": d, "title": "", "text": texts.get(q, q)}) + "\n" for d, q in judged.items())
    )
    out, taska, scores = tmp_path / "out", tmp_path / "taska-govt.jsonl", tmp_path / "scores.json"
    assert (
        main(
            [
                "eval",
                "--model",
                "bm25",
                "--task",
                "mtrag-govt",
                "--data-dir",
                str(clone),
                "--corpus",
                str(corpus),
                "--limit",
                "2",
                "--output-dir",
                str(out),
                "--mtrag-out",
                str(taska),
                "--quiet",
            ]
        )
        == 0
    )
    records = _records(taska)
    assert {r["Collection"] for r in records} == {"mt-rag-govt-elser-512-100-20240611"}
    assert [r["task_id"] for r in records] == list(_run(out))  # the run file lists queries in task order
    assert all("<::>" in r["task_id"] for r in records)
    assert main(["score", "--predictions", str(taska), "--data-dir", str(clone), "--output", str(scores)]) == 0
    (result_file,) = out.rglob("mtrag-govt.json")
    expected = json.loads(result_file.read_text())["scores"]["dev"][0]
    got = json.loads(scores.read_text())["collections"]["all"]["scores"]
    assert got == pytest.approx({k: expected[k] for k in got}, abs=1e-9) and got["ndcg_at_5"] > 0


def test_a_top_k_under_ten_gives_that_many_contexts(tmp_path, corpus):
    """Catches: contexts padded or cut to a fixed 10 regardless of eval's --top-k."""
    out, taska = tmp_path / "out", tmp_path / "taska.jsonl"
    assert _eval(out, corpus[0], taska, "--k", "1,3,5", "--top-k", "5") == 0
    run = _run(out)
    assert all(len(docs) == 5 for docs in run.values())
    for record in _records(taska):
        assert [(c["score"], c["document_id"]) for c in record["contexts"]] == run[record["task_id"]]
    assert check_predictions(taska, "retrieval_taska").problems == []


def test_a_result_skipped_as_finished_still_writes_the_file(tmp_path, corpus, capsys):
    """Catches: no file when eval skips the finished result (the run is then read back from its .run.trec) or a
    different one than the first run wrote."""
    out, taska = tmp_path / "out", tmp_path / "taska.jsonl"
    assert _eval(out, corpus[0], taska) == 0
    first = taska.read_bytes()
    taska.unlink()
    capsys.readouterr()
    assert _eval(out, corpus[0], taska) == 0
    err = capsys.readouterr().err
    assert "note: skipped" in err and f"{taska} ({LIMIT} tasks)" in err
    assert taska.read_bytes() == first


@pytest.mark.parametrize(
    "change, why",
    [
        ({"--history": "current,full"}, "one --history"),
        ({"--history": "all"}, "one --history"),
        ({"--task": f"{TASK},mtragun-fiqa"}, "one --task"),
        ({"--task": "mtrbench-sample", "--data-dir": None, "--corpus": None}, "MTRAG and MTRAG-UN tasks"),
        ({"--mtrag-out": "taska.json"}, "*.jsonl"),
    ],
)
def test_refusals_are_one_error_line_and_write_nothing(tmp_path, capsys, change, why):
    """Catches: a check made after evaluating (result files written, then an error); two histories' or tasks'
    runs merged into one file (task ids twice, or two runs of a query); a Task A file for a task with no MTRAG
    collection (`score --predictions` could never read it); a name MTRAG's checker rejects; a traceback instead
    of one `error:` line."""
    options = {
        "--model": "bm25",
        "--task": TASK,
        "--data-dir": str(DATA),
        "--corpus": str(tmp_path / "none.jsonl"),
        "--output-dir": str(tmp_path / "out"),
        "--mtrag-out": "taska.jsonl",
        **change,
    }
    options["--mtrag-out"] = str(tmp_path / options["--mtrag-out"])
    argv = ["eval", "--quiet"] + [
        word for flag, value in options.items() if value is not None for word in (flag, value)
    ]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and why in err[0], err
    assert list(tmp_path.iterdir()) == []  # no result, no prediction file
