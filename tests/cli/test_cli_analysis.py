"""score/compare/pool from the command line, checked against scipy and hand values."""

from __future__ import annotations

import json

import pytest
from cli_run import run_cli
from scipy import stats

from mtrbench.formats.qrels import format_qrels
from mtrbench.formats.run import format_run


def mtrbench(*args):
    return run_cli(*args)


@pytest.mark.slow
def test_compare_two_eval_results(native_mini, tmp_path):
    proc = mtrbench(
        "eval", "--task", str(native_mini), "--history", "current,rewrite", "--output-dir", str(tmp_path), "--quiet"
    )
    assert proc.returncode == 0, proc.stderr
    a = next(tmp_path.rglob("history=current/native-mini.json"))
    b = next(tmp_path.rglob("history=rewrite/native-mini.json"))
    doc = json.loads(a.read_text())
    lo, hi = doc["mtrbench"]["confidence_intervals"]["ndcg_at_10"]
    assert lo <= doc["scores"]["test"][0]["ndcg_at_10"] <= hi
    out = tmp_path / "cmp.json"
    proc = mtrbench("compare", str(a), str(b), "--metrics", "ndcg_at_10,mrr_at_10", "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    comparison = json.loads(out.read_text())
    rows = {r["metric"]: r for r in comparison["comparisons"]}
    per_a = {
        json.loads(line)["qid"]: json.loads(line)
        for line in a.with_name("native-mini.per_query.jsonl").read_text().splitlines()
    }
    per_b = {
        json.loads(line)["qid"]: json.loads(line)
        for line in b.with_name("native-mini.per_query.jsonl").read_text().splitlines()
    }
    qids = sorted(per_a)
    x = [per_a[q]["ndcg_at_10"] for q in qids]
    y = [per_b[q]["ndcg_at_10"] for q in qids]
    assert comparison["paired_queries"] == 4
    assert rows["ndcg_at_10"]["diff"] == pytest.approx(sum(y) / 4 - sum(x) / 4)
    if rows["ndcg_at_10"]["t_p_value"] is not None:
        assert rows["ndcg_at_10"]["t_p_value"] == pytest.approx(stats.ttest_rel(y, x).pvalue)
    proc = mtrbench("compare", str(a), str(tmp_path / "nope.json"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr


@pytest.mark.slow
def test_score_with_refined_qrels_and_ragalign(tmp_path):
    original = {"q1": {"a": 1}, "q2": {"c": 1}, "q3": {"e": 1}}
    refined = {"q1": {"a": 1, "x": 1}, "q2": {"c": 1, "y": 1}, "q3": {"e": 1}}
    run = {"q1": {"x": 0.9, "b": 0.8}, "q2": {"c": 0.9, "y": 0.8}, "q3": {"z": 0.9}}
    (tmp_path / "o.qrels").write_text(format_qrels(original))
    (tmp_path / "r.qrels").write_text(format_qrels(refined))
    (tmp_path / "run.trec").write_text(format_run(run, "t"))
    (tmp_path / "gen.jsonl").write_text(
        "".join(json.dumps({"qid": q, "label": v}) + "\n" for q, v in (("q1", 1), ("q2", 1), ("q3", 0)))
    )
    out = tmp_path / "s.json"
    proc = mtrbench(
        "score",
        "--run",
        str(tmp_path / "run.trec"),
        "--qrels",
        str(tmp_path / "o.qrels"),
        "--refined-qrels",
        str(tmp_path / "r.qrels"),
        "--generation-judgments",
        str(tmp_path / "gen.jsonl"),
        "--k",
        "1,2,10",
        "--ragalign-metric",
        "hit_rate_at_2",
        "--ragalign-continuous",
        "ndcg_at_2",
        "--output",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    ref = doc["refined_qrels"]
    # Hit@2: original q1 miss, q2 hit, q3 miss = 1/3; refined q1 hit (x), q2 hit, q3 miss = 2/3
    assert ref["original"]["hit_rate_at_2"] == pytest.approx(1 / 3)
    assert ref["refined"]["hit_rate_at_2"] == pytest.approx(2 / 3)
    assert ref["difference"]["hit_rate_at_2"] == pytest.approx(1 / 3)
    # BRIDGE Hole@2: q1 has x (1/2), q2 has y (1/2), q3 none -> mean 1/3
    assert ref["hole_bridge"]["hole_bridge_at_2"] == pytest.approx(1 / 3)
    # RAGAlign binary: generation 1,1,0; Hit@2 original 0,1,0 -> agree on q2,q3 = 2/3; refined 1,1,0 -> 1.0
    assert doc["ragalign"]["original"]["binary"]["value"] == pytest.approx(2 / 3)
    assert doc["ragalign"]["refined"]["binary"]["value"] == pytest.approx(1.0)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"qid": "q1", "label": "maybe"}\n')
    proc = mtrbench(
        "score",
        "--run",
        str(tmp_path / "run.trec"),
        "--qrels",
        str(tmp_path / "o.qrels"),
        "--generation-judgments",
        str(bad),
    )
    assert proc.returncode == 2 and "bad.jsonl:1" in proc.stderr and "Traceback" not in proc.stderr


def test_pool_cli_matches_hand_values(tmp_path):
    original = {"q1": {"g1": 1}, "q2": {"g2": 1}}
    refined = {"q1": {"g1": 1, "h1": 1, "h2": 1}, "q2": {"g2": 1, "h3": 1}}
    (tmp_path / "o.qrels").write_text(format_qrels(original))
    (tmp_path / "r.qrels").write_text(format_qrels(refined))
    lists = {
        "A": (["g1", "h1"], ["x", "y"]),
        "B": (["h1", "z"], ["g2", "z"]),
        "C": (["h2", "z"], ["h3", "g2"]),
        "D": (["z", "w"], ["w", "z"]),
        "E": (["g1", "z"], ["g2", "h3"]),
    }
    paths = []
    for name, (q1, q2) in lists.items():
        run = {"q1": {d: 1 - i / 10 for i, d in enumerate(q1)}, "q2": {d: 1 - i / 10 for i, d in enumerate(q2)}}
        paths.append(tmp_path / f"{name}.trec")
        paths[-1].write_text(format_run(run, name))
    out = tmp_path / "pool.json"
    proc = mtrbench(
        "pool",
        *map(str, paths),
        "--qrels",
        str(tmp_path / "o.qrels"),
        "--refined-qrels",
        str(tmp_path / "r.qrels"),
        "--k",
        "2",
        "--orders",
        "20",
        "--output",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["marginal_contribution"] == {"A.trec": 0.0, "B.trec": 0.0, "C.trec": 0.5, "D.trec": 0.0, "E.trec": 0.0}
    assert doc["marginal_contribution_mean"] == pytest.approx(0.1)
    assert doc["holes_per_pool_size"][-1] == 3 and doc["total_holes_found"] == 3


def test_run_eval_and_score_report_the_same_analyses(native_mini, tmp_path):
    """One AnalysisOptions, two callers: run_eval on a task and `mtrbench score` on the run it wrote."""
    from mtrbench.analyses.run import AnalysisOptions
    from mtrbench.data import load_task
    from mtrbench.pipeline.evaluate import EvalConfig, run_eval
    from mtrbench.retrieve import RetrieverOptions

    task = load_task(str(native_mini))
    qrels = task.qrels()
    extra = task.corpus.ids[0]
    (tmp_path / "o.qrels").write_text(format_qrels(qrels))
    (tmp_path / "r.qrels").write_text(format_qrels({q: {**docs, extra: 1} for q, docs in qrels.items()}))
    (tmp_path / "gen.jsonl").write_text(
        "".join(json.dumps({"qid": q, "label": n % 2}) + "\n" for n, q in enumerate(sorted(qrels)))
    )
    options = AnalysisOptions(
        refined_qrels=tmp_path / "r.qrels",
        generation_judgments=tmp_path / "gen.jsonl",
        ragalign_metric="hit_rate_at_3",
        ragalign_continuous="ndcg_at_5",
    )
    [result] = run_eval(
        "bm25",
        str(native_mini),
        EvalConfig(output_dir=tmp_path / "results", analyses=options),
        RetrieverOptions.of(show_progress=False),
    )
    assert set(result.analyses()) == {"refined_qrels", "ragalign"}
    assert set(result.analyses()["ragalign"]) == {"original", "refined"}
    document = json.loads(result.path.read_text())["mtrbench"]
    assert document["ragalign"] == result.analyses()["ragalign"]

    out = tmp_path / "score.json"
    settings = document["settings"]
    proc = mtrbench(
        "score",
        "--run",
        str(result.run_path),
        "--qrels",
        str(tmp_path / "o.qrels"),
        "--k",
        ",".join(map(str, settings["k_values"])),
        "--metrics",
        ",".join(settings["metrics"]),
        "--relevance-level",
        str(settings["relevance_level"]),
        "--refined-qrels",
        str(tmp_path / "r.qrels"),
        "--generation-judgments",
        str(tmp_path / "gen.jsonl"),
        "--ragalign-metric",
        "hit_rate_at_3",
        "--ragalign-continuous",
        "ndcg_at_5",
        "--output",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    scored = json.loads(out.read_text())
    assert scored["ragalign"] == result.analyses()["ragalign"]
    assert scored["refined_qrels"] == result.analyses()["refined_qrels"]
