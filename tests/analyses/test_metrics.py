"""Metrics equal hand computation and pytrec_eval called directly."""

from __future__ import annotations

import json
import math
import random

import pytest
import pytrec_eval
from cli_run import run_cli

from mtrbench.formats.qrels import format_qrels, read_qrels
from mtrbench.formats.run import format_run, read_run
from mtrbench.measures import evaluate as evaluate_measures
from mtrbench.measures import parse_measures


def evaluate(qrels, run, k_values, families, relevance_level=1):
    return evaluate_measures(qrels, run, parse_measures(families, k_values), relevance_level)


QRELS = {
    "q1": {"d1": 2, "d2": 1, "d3": 0},
    "q2": {"d4": 1},
    "q3": {"d5": 0},  # no positive judgment: excluded
    "q4": {"d6": 1},  # absent from the run: scores 0, still counted
    "q5": {"a": 1},
}
RUN = {
    "q1": {"d3": 0.9, "d1": 0.8, "dx": 0.7, "d2": 0.6},
    "q2": {"dy": 0.5, "dz": 0.5, "d4": 0.4},
    "q3": {"d5": 1.0},
    "q5": {"a": 1.0, "b": 1.0},  # tie: trec_eval ranks doc ids descending, so b before a
    "q9": {"d1": 1.0},  # not judged: ignored
}
L2_3 = math.log2(3)


def test_hand_computed_values():
    ev = evaluate(QRELS, RUN, [1, 3, 5], ["ndcg", "recall", "mrr", "map", "precision", "hit"])
    assert ev.excluded == ["q3"]
    assert sorted(ev.per_query) == ["q1", "q2", "q4", "q5"]
    q1, q2, q4, q5 = (ev.per_query[q] for q in ("q1", "q2", "q4", "q5"))
    # q1 ranking: d3 (0), d1 (2), dx (-), d2 (1); trec_eval gains are the grades
    assert q1["ndcg_at_3"] == pytest.approx((2 / L2_3) / (2 + 1 / L2_3))
    assert q1["ndcg_at_5"] == pytest.approx((2 / L2_3 + 1 / math.log2(5)) / (2 + 1 / L2_3))
    assert q1["recall_at_3"] == pytest.approx(0.5)
    assert q1["recall_at_5"] == pytest.approx(1.0)
    assert q1["precision_at_3"] == pytest.approx(1 / 3)
    assert q1["hit_rate_at_1"] == 0 and q1["hit_rate_at_3"] == 1
    assert q1["mrr_at_1"] == 0 and q1["mrr_at_3"] == pytest.approx(0.5)
    assert q1["map_at_3"] == pytest.approx((1 / 2) / 2)
    assert q1["map_at_5"] == pytest.approx((1 / 2 + 2 / 4) / 2)
    # q2: dz, dy (tie, id descending), d4
    assert q2["mrr_at_3"] == pytest.approx(1 / 3) and q2["mrr_at_1"] == 0
    assert q2["ndcg_at_3"] == pytest.approx(0.5)
    assert all(v == 0 for v in q4.values())
    # q5: b ranks first under trec_eval's tie rule, so the relevant a is at rank 2
    assert q5["mrr_at_1"] == 0 and q5["mrr_at_3"] == pytest.approx(0.5)
    assert q5["hit_rate_at_1"] == 0
    means = ev.mean()
    assert means["mrr_at_3"] == pytest.approx((0.5 + 1 / 3 + 0 + 0.5) / 4)
    assert means["recall_at_3"] == pytest.approx((0.5 + 1 + 0 + 1) / 4)


def _mrr_at_k_by_hand(qrels, docs, k):
    by_id_desc = sorted(docs.items(), key=lambda x: x[0], reverse=True)
    order = sorted(by_id_desc, key=lambda x: -x[1])[:k]  # stable: ties keep id-descending order
    for rank, (doc, _) in enumerate(order, 1):
        if qrels.get(doc, 0) > 0:
            return 1 / rank
    return 0.0


def _cast_run(qrels, seed=13):
    rng = random.Random(seed)
    run = {}
    for n, (qid, judged) in enumerate(sorted(qrels.items())):
        if n % 17 == 0:
            continue  # some judged queries missing from the run entirely
        docs = rng.sample(sorted(judged), min(len(judged), 40))
        docs += [f"MARCO_fake{n}_{i}" for i in range(30)]
        run[qid] = {d: round(rng.random(), 2) for d in docs}  # rounding creates ties
    return run


def test_generated_run_against_real_cast2019_qrels(shared, tmp_path):
    qrels = read_qrels(shared / "datasets/real/trec-cast/2019/2019qrels.txt")
    assert len(qrels) > 100
    run = _cast_run(qrels)
    ks = [1, 3, 5, 10, 20, 100]
    ev = evaluate(qrels, run, ks, ["ndcg", "recall", "mrr", "map", "precision", "hit"])

    positives = {q: d for q, d in qrels.items() if any(g > 0 for g in d.values())}
    assert set(ev.per_query) == set(positives)
    assert ev.excluded == sorted(set(qrels) - set(positives))
    direct_run = {q: run.get(q, {}) for q in positives}
    direct = pytrec_eval.RelevanceEvaluator(
        positives, {f"{m}.1,5,10,20,100" for m in ("ndcg_cut", "recall", "P", "map_cut", "success")}
    ).evaluate(direct_run)
    for qid in positives:
        for k in (1, 5, 10, 20, 100):
            assert ev.per_query[qid][f"ndcg_at_{k}"] == pytest.approx(direct[qid][f"ndcg_cut_{k}"])
            assert ev.per_query[qid][f"recall_at_{k}"] == pytest.approx(direct[qid][f"recall_{k}"])
            assert ev.per_query[qid][f"precision_at_{k}"] == pytest.approx(direct[qid][f"P_{k}"])
            assert ev.per_query[qid][f"map_at_{k}"] == pytest.approx(direct[qid][f"map_cut_{k}"])
            assert ev.per_query[qid][f"hit_rate_at_{k}"] == pytest.approx(direct[qid][f"success_{k}"])
        for k in ks:
            assert ev.per_query[qid][f"mrr_at_{k}"] == pytest.approx(_mrr_at_k_by_hand(qrels[qid], run.get(qid, {}), k))
    # pytrec_eval alone drops queries absent from the run; we count them as 0
    missing = [q for q in positives if q not in run]
    assert missing
    assert ev.mean()["ndcg_at_10"] == pytest.approx(sum(direct[q]["ndcg_cut_10"] for q in positives) / len(positives))

    # the same through files and the CLI
    (tmp_path / "run.trec").write_text(format_run(run, "gen"))
    reread = read_run(tmp_path / "run.trec")
    assert {q: {d: round(s, 2) for d, s in docs.items()} for q, docs in reread.items()} == run
    out = tmp_path / "scores.json"
    proc = run_cli(
        "score",
        "--run",
        str(tmp_path / "run.trec"),
        "--qrels",
        str(shared / "datasets/real/trec-cast/2019/2019qrels.txt"),
        "--output",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    scores = json.loads(out.read_text())["scores"]
    assert scores["ndcg_at_10"] == pytest.approx(ev.mean()["ndcg_at_10"])
    assert scores["mrr_at_10"] == pytest.approx(ev.mean()["mrr_at_10"])


def test_trec_files_roundtrip_and_errors(tmp_path):
    path = tmp_path / "q.txt"
    path.write_text(format_qrels({"a": {"x": 2, "y": 0}}))
    assert read_qrels(path) == {"a": {"x": 2, "y": 0}}
    bad = tmp_path / "bad.run"
    bad.write_text("q1 Q0 d1 1 0.5 tag\nq1 Q0 d2 2 notanumber tag\n")
    from mtrbench.infra.errors import MtrbenchError

    with pytest.raises(MtrbenchError, match=r"bad.run:2: score 'notanumber'"):
        read_run(bad)
    bad.write_text("q1 Q0 d1 1 0.5\n")
    with pytest.raises(MtrbenchError, match=r"bad.run:1: a run line needs 6 fields"):
        read_run(bad)


def test_relevance_level_as_trec_cast_uses_it(shared):
    qrels = read_qrels(shared / "datasets/real/trec-cast/2019/2019qrels.txt")
    run = _cast_run(qrels, seed=5)
    ours = evaluate(qrels, run, [5, 10], ["recall", "hit", "ndcg"], relevance_level=2)
    positives = {q: d for q, d in qrels.items() if any(g > 0 for g in d.values())}
    direct = pytrec_eval.RelevanceEvaluator(
        positives, {"recall.5,10", "success.5,10", "ndcg_cut.10"}, relevance_level=2
    ).evaluate({q: run.get(q, {}) for q in positives})
    for qid in positives:
        assert ours.per_query[qid]["recall_at_10"] == pytest.approx(direct[qid]["recall_10"])
        assert ours.per_query[qid]["hit_rate_at_5"] == pytest.approx(direct[qid]["success_5"])
        assert ours.per_query[qid]["ndcg_at_10"] == pytest.approx(direct[qid]["ndcg_cut_10"])
    level1 = evaluate(qrels, run, [10], ["recall"])
    assert ours.mean()["recall_at_10"] != pytest.approx(level1.mean()["recall_at_10"])


def test_all_relevant_query_and_k_beyond_the_run():
    qrels = {"q": {"a": 1, "b": 1, "c": 1}}
    run = {"q": {"a": 0.3, "b": 0.2, "c": 0.1}}
    ev = evaluate(qrels, run, [2, 10], ["ndcg", "precision", "recall", "mrr", "map", "hit", "hole_unjudged"])
    row = ev.per_query["q"]
    assert row["ndcg_at_2"] == pytest.approx(1.0) and row["ndcg_at_10"] == pytest.approx(1.0)
    assert row["precision_at_2"] == 1.0 and row["precision_at_10"] == pytest.approx(3 / 10)  # trec_eval divides by k
    assert row["recall_at_2"] == pytest.approx(2 / 3) and row["recall_at_10"] == 1.0
    assert row["map_at_10"] == 1.0 and row["mrr_at_10"] == 1.0 and row["hit_rate_at_2"] == 1.0
    assert row["hole_unjudged_at_10"] == 0.0


def test_atomic_write_leaves_ordinary_permissions(tmp_path):
    import os

    from mtrbench.infra.atomic import atomic_write_text

    mask = os.umask(0o022)
    try:
        target = tmp_path / "out" / "result.json"
        atomic_write_text(target, "{}\n")
    finally:
        os.umask(mask)
    assert target.read_text() == "{}\n"
    assert target.stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600
    assert [p.name for p in target.parent.iterdir()] == ["result.json"]  # no temp file left behind
