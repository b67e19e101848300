"""`score --task ikat-2024` under the card's official protocol equals trec_eval's (pytrec_eval) at relevance level 2
with every judged turn counted: a judged turn with grades 0-1 only keeps its graded nDCG (binary measures 0 there),
and the binary measures count grade >= 2 only (the card's level, the track's)."""

from __future__ import annotations

import json

import pytest
import pytrec_eval

from mtrbench.cli import main
from tests.data.ikat_fixtures import ranked_run, turn_ids, write_qrels

MEASURES = {"ndcg_at_10": "ndcg_cut_10", "precision_at_10": "P_10"}


def _pytrec_means(qrels: dict, run: dict, level: int) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "P.10"}, relevance_level=level)
    values = evaluator.evaluate(run)
    # trec_eval -c: the mean over every judged turn, one the run lacks or pytrec_eval skips counting 0
    means = {key: sum(values.get(q, {}).get(name, 0.0) for q in qrels) / len(qrels) for key, name in MEASURES.items()}
    return means, values


def test_ikat_2024_scores_as_trec_eval_at_level_2(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    qids = turn_ids(2024)[:4]
    qrels = write_qrels(data / "2024-qrels.txt", qids)  # turn 0: all grade 0, turn 1: grades 0-1 only
    assert max(qrels[qids[0]].values()) == 0 and max(qrels[qids[1]].values()) == 1
    ranked = ranked_run(qrels, qids)
    graded_1 = [d for d, g in qrels[qids[1]].items() if g == 1]  # ranked first in turn 1
    ranked[qids[1]] = [(d, 100.0 - i) for i, d in enumerate(graded_1)] + [
        (d, s) for d, s in ranked[qids[1]] if d not in graded_1
    ]
    run = {qid: dict(docs) for qid, docs in ranked.items()}
    path = tmp_path / "run.trec"
    path.write_text(
        "".join(f"{q} Q0 {d} {r} {s} fixture\n" for q, docs in ranked.items() for r, (d, s) in enumerate(docs, 1))
    )
    expected, per_turn = _pytrec_means(qrels, run, level=2)
    # the fixture's point: the grade-0-1 turn has a graded nDCG above 0 and no relevant passage at level 2 ...
    assert per_turn[qids[1]]["ndcg_cut_10"] > 0 and per_turn[qids[1]]["P_10"] == 0
    # ... and grade-1 passages would count at level 1
    assert _pytrec_means(qrels, run, level=1)[0]["precision_at_10"] != pytest.approx(expected["precision_at_10"])

    out = tmp_path / "scores.json"
    argv = ["score", "--run", str(path), "--task", "ikat-2024", "--protocol", "official", "--data-dir", str(data)]
    assert main([*argv, "--output", str(out), "--metrics", "nDCG@10,P@10"]) == 0
    capsys.readouterr()
    report = json.loads(out.read_text())
    assert report["protocol"] == "official:ikat"
    for key, value in expected.items():
        assert report["scores"][key] == pytest.approx(value, abs=1e-12), key
