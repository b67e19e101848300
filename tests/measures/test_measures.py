"""Measures as values: parsing, printing, keys, relevance levels, the registry."""

from __future__ import annotations

import pytest
import pytrec_eval
from scipy import stats

from mtrbench.infra.errors import MtrbenchError
from mtrbench.measures import Measure, all_families, evaluate, label, measure_for_key, parse, parse_measures

QRELS = {"q1": {"a": 2, "b": 1, "c": 0}, "q2": {"d": 1, "e": 2}, "q3": {"f": 1}, "q4": {"g": 0}}
RUN = {"q1": {"b": 0.9, "a": 0.8, "x": 0.7}, "q2": {"d": 0.9, "y": 0.8, "e": 0.1}, "q3": {"z": 1.0}, "q9": {"a": 1.0}}


@pytest.mark.parametrize(
    "text, measure, printed",
    [
        ("nDCG@10", Measure("ndcg", 10), "nDCG@10"),
        ("ndcg@10", Measure("ndcg", 10), "nDCG@10"),
        ("R@100(rel=2)", Measure("recall", 100, 2), "Recall@100(rel=2)"),
        ("Recall@5", Measure("recall", 5), "Recall@5"),
        ("RR@10", Measure("mrr", 10), "MRR@10"),
        ("AP@100", Measure("map", 100), "MAP@100"),
        ("P@3(rel=1)", Measure("precision", 3, 1), "P@3(rel=1)"),
        ("Success@1", Measure("hit", 1), "Hit@1"),
        ("hole_beir@10", Measure("hole_beir", 10), "Hole-BEIR@10"),
        ("hole_unjudged@10", Measure("hole_unjudged", 10), "Hole-unjudged@10"),
        ("RAGAlign@10", Measure("ragalign", 10, None, (("of", "Hit"),)), "RAGAlign@10"),
        ("RAGAlign@10(of=ndcg)", Measure("ragalign", 10, None, (("of", "nDCG"),)), "RAGAlign@10(of=nDCG)"),
    ],
)
def test_parse_and_print(text, measure, printed):
    assert parse(text) == measure
    assert str(measure) == printed
    assert parse(printed) == measure  # printing round-trips


@pytest.mark.parametrize(
    "text, message",
    [
        ("nDCG@10(rel=2)", "takes no relevance level"),
        ("nDCG", "needs a cutoff"),
        ("R@0", "positive"),
        ("Bogus@10", "unknown measure"),
        ("R@10(rel=x)", "rel must be a positive integer"),
        ("R@10(depth=3)", "takes no parameter 'depth'"),
        ("R@10)", "write a measure as"),
        ("RAGAlign@10(of=Hole-BEIR)", "per-query retrieval measure"),
    ],
)
def test_bad_measure_strings(text, message):
    with pytest.raises(MtrbenchError, match=message):
        parse(text)


def test_keys_follow_mteb_at_the_task_level_and_get_their_own_at_another():
    recall2 = parse("R@100(rel=2)")
    assert Measure("recall", 100).key(1) == "recall_at_100"
    assert recall2.key(2) == "recall_at_100"  # the task's own level: mteb's key
    assert recall2.key(1) == "recall_at_100_rel2"  # another level: a key of its own
    assert parse("nDCG@10").key(2) == "ndcg_at_10"  # graded: no level at all
    assert parse("RAGAlign@10(of=nDCG)").key(1) == "ragalign_ndcg_at_10"
    assert label("recall_at_100_rel2") == "Recall@100(rel=2)"
    assert label("hit_rate_at_5") == "Hit@5" and label("not_a_measure") == "not_a_measure"


def test_every_family_round_trips_through_its_key_and_is_documented():
    for spec in all_families().values():
        assert spec.definition and spec.citation, spec.name
        at = "@7" if spec.takes_cutoff else ""  # generation measures (BLEU-1, CitRecall) take no cutoff
        measure = parse(f"{spec.label}{at}")
        assert measure_for_key(measure.key(1)) == measure
        if spec.uses_relevance_level:
            at3 = parse(f"{spec.label}{at}(rel=3)")
            assert measure_for_key(at3.key(1)) == at3


def _direct(level: int, measure: str) -> dict[str, float]:
    positives = {q: d for q, d in QRELS.items() if any(g > 0 for g in d.values())}
    scores = pytrec_eval.RelevanceEvaluator(positives, {measure}, relevance_level=level).evaluate(
        {q: RUN.get(q, {}) for q in positives}
    )
    return {q: v[measure.replace(".", "_")] for q, v in scores.items()}


def test_relevance_level_is_part_of_the_measure():
    measures = parse_measures(["R@2", "R@2(rel=2)", "P@2(rel=2)", "nDCG@2"], [2])
    ev = evaluate(QRELS, RUN, measures, relevance_level=1)
    assert ev.metric_keys == ["recall_at_2", "recall_at_2_rel2", "precision_at_2_rel2", "ndcg_at_2"]
    assert ev.values("recall_at_2") == _direct(1, "recall.2")
    assert ev.values("recall_at_2_rel2") == _direct(2, "recall.2")
    assert ev.values("precision_at_2_rel2") == _direct(2, "P.2")
    # by hand, level 2: q1 relevant {a} found at rank 2 -> 1; q2 relevant {e} at rank 3 -> 0; q3 none relevant -> 0
    assert ev.values("recall_at_2_rel2") == {"q1": 1.0, "q2": 0.0, "q3": 0.0}
    # level 1: q1 {a, b} both in top 2 -> 1; q2 {d, e}: d only -> 0.5; q3 {f} missed -> 0
    assert ev.values("recall_at_2") == {"q1": 1.0, "q2": 0.5, "q3": 0.0}
    assert ev.excluded == ["q4"]


def test_a_task_at_level_2_keeps_mteb_keys_with_level_2_values():
    ev = evaluate(QRELS, RUN, parse_measures(["recall", "mrr"], [2]), relevance_level=2)
    assert ev.relevance_level == 2 and ev.metric_keys == ["recall_at_2", "mrr_at_2"]
    assert ev.values("recall_at_2") == _direct(2, "recall.2")
    # MRR@2 at level 2: q1 a at rank 2 -> 1/2; q2 e at rank 3 (cut) -> 0
    assert ev.values("mrr_at_2") == {"q1": 0.5, "q2": 0.0, "q3": 0.0}
    assert ev.labels() == {"recall_at_2": "Recall@2(rel=2)", "mrr_at_2": "MRR@2(rel=2)"}


def test_ragalign_as_a_measure_pairs_only_judged_generations():
    generation = {"q1": 1, "q2": 0}  # q3 has no verdict: left out, not counted as a failure
    ev = evaluate(QRELS, RUN, [parse("RAGAlign@1")], generation=generation)
    # Hit@1: q1 b (relevant) -> 1, q2 d -> 1; agreement with 1, 0 on q1 only -> 1/2
    assert ev.aggregates["ragalign_at_1"] == 0.5
    assert ev.details["ragalign_at_1"]["n"] == 2 and ev.details["ragalign_at_1"]["missing_generation"] == 1
    assert "ndcg_at_3" not in ev.metric_keys  # computed for RAGAlign, not reported unless asked
    ndcg3 = evaluate(QRELS, RUN, [parse("nDCG@3")]).values("ndcg_at_3")
    full = evaluate(QRELS, RUN, [parse("RAGAlign@3(of=nDCG)")], generation={"q1": 1, "q2": 0, "q3": 0})
    expected = stats.pointbiserialr([1, 0, 0], [ndcg3["q1"], ndcg3["q2"], ndcg3["q3"]])
    assert full.aggregates["ragalign_ndcg_at_3"] == pytest.approx(expected.statistic)
    assert full.details["ragalign_ndcg_at_3"]["p_value"] == pytest.approx(expected.pvalue)


def test_ragalign_without_generation_verdicts_is_one_clear_error():
    with pytest.raises(MtrbenchError, match="generation"):
        evaluate(QRELS, RUN, [parse("RAGAlign@1")])


def test_family_names_expand_over_k_and_keep_order():
    measures = parse_measures(["ndcg", "R@100(rel=2)", "ndcg"], [1, 10])
    assert [str(m) for m in measures] == ["nDCG@1", "nDCG@10", "Recall@100(rel=2)"]


def test_metrics_command_lists_every_family(capsys):
    import json

    from mtrbench.cli import main

    assert main(["metrics", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["family"] for r in rows] == list(all_families())
    by_family = {r["family"]: r for r in rows}
    assert by_family["recall"]["relevance_level"] is True and by_family["ndcg"]["relevance_level"] is False
    assert by_family["hole_beir"]["per_query"] is False and "R" in by_family["recall"]["names"]
    assert all(r["definition"] and r["citation"] for r in rows)


def test_score_records_the_level_and_keys_other_levels_apart(tmp_path):
    import json

    from mtrbench.cli import main
    from mtrbench.formats.qrels import format_qrels
    from mtrbench.formats.run import format_run

    (tmp_path / "q.trec").write_text(format_qrels(QRELS))
    (tmp_path / "r.trec").write_text(format_run(RUN, "t"))
    out = tmp_path / "scores.json"
    assert (
        main(
            [
                "score",
                "--run",
                str(tmp_path / "r.trec"),
                "--qrels",
                str(tmp_path / "q.trec"),
                "--relevance-level",
                "2",
                "--metrics",
                "R@2,R@2(rel=1)",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    written = json.loads(out.read_text())
    assert written["relevance_level"] == 2
    assert written["measures"] == {"recall_at_2": "Recall@2(rel=2)", "recall_at_2_rel1": "Recall@2(rel=1)"}
    level2, level1 = _direct(2, "recall.2"), _direct(1, "recall.2")
    assert written["scores"]["recall_at_2"] == pytest.approx(sum(level2.values()) / 3)
    assert written["scores"]["recall_at_2_rel1"] == pytest.approx(sum(level1.values()) / 3)


@pytest.mark.parametrize("metrics", ["Bogus@10", "nDCG@10(rel=2)", "R@10)"])
def test_bad_measure_on_the_command_line_is_one_error_line(tmp_path, capsys, metrics):
    from mtrbench.cli import main
    from mtrbench.formats.qrels import format_qrels
    from mtrbench.formats.run import format_run

    (tmp_path / "q.trec").write_text(format_qrels(QRELS))
    (tmp_path / "r.trec").write_text(format_run(RUN, "t"))
    assert (
        main(["score", "--run", str(tmp_path / "r.trec"), "--qrels", str(tmp_path / "q.trec"), "--metrics", metrics])
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("error:") and len(err.strip().splitlines()) == 1 and "Traceback" not in err
