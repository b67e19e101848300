"""An official protocol carries its benchmark's relevance threshold (issue 42, section 1): `official:ikat` counts
grade >= 2 as relevant wherever it is chosen, a --relevance-level or a card that contradicts it is refused, a task
defaults to its card's official protocol, and which turns each protocol leaves out is what docs/protocols.md says.

The qrels and run are made by hand with grades 0/1/2; every expected value is worked out below and checked
against pytrec_eval (trec_eval's own code) where it applies.
"""

from __future__ import annotations

import math

import pytest
import pytrec_eval

from mtrbench.data.cards import builtin_cards, card_from_dict
from mtrbench.data.model import ConversationalQuery, Corpus, TaskData
from mtrbench.data.stats import task_stats
from mtrbench.infra.errors import UserInputError
from mtrbench.measures import parse_measures
from mtrbench.measures.protocols import PROTOCOLS, choose, for_card, official_choices
from mtrbench.measures.protocols.mtrag_predictions import score_predictions

# t1: a grade-2 and a grade-1 passage; t2: grade 1 at best (nothing relevant at level 2); t3: judged, all grade 0;
# t4: judged grade 2, absent from the run.
QRELS = {
    "t1": {"a": 2, "b": 1, "c": 0},
    "t2": {"d": 1, "e": 0},
    "t3": {"f": 0, "g": 0},
    "t4": {"h": 2},
}
RUN = {
    "t1": {"b": 3.0, "a": 2.0, "x": 1.0},  # the grade-1 passage first, the grade-2 one second
    "t2": {"d": 3.0, "e": 2.0},
    "t3": {"f": 3.0, "g": 2.0},
}
MEASURES = parse_measures(["MRR@10", "P@2", "nDCG@2"], [])

# nDCG@2 of t1 (raw grades as gains): b (1) then a (2) against the ideal a (2) then b (1).
NDCG_T1 = (1 / math.log2(2) + 2 / math.log2(3)) / (2 / math.log2(2) + 1 / math.log2(3))
# official:ikat, every judged turn counted (trec_eval -c), binary measures at grade >= 2:
#   MRR@10: t1 1/2 (a at rank 2), t2 0, t3 0, t4 0;  P@2: t1 1/2, the rest 0;  nDCG@2: t1 NDCG_T1, t2 1 (d, grade 1,
#   first: its ideal), t3 0, t4 0.
OFFICIAL_IKAT = {"mrr_at_10": 0.5 / 4, "precision_at_2": 0.5 / 4, "ndcg_at_2": (NDCG_T1 + 1.0) / 4}
# The same at grade >= 1 (what `score --qrels Q --protocol official:ikat` gave): MRR@10 (1 + 1) / 4, P@2 (1 + 1/2) / 4.
AT_GRADE_1 = {"mrr_at_10": 0.5, "precision_at_2": 0.375}


def pytrec_means(level: int, qids: list[str]) -> dict[str, float]:
    """pytrec_eval's means over ``qids`` (a turn it does not return, one absent from the run, scores 0: -c)."""
    names = {"mrr_at_10": "recip_rank", "precision_at_2": "P_2", "ndcg_at_2": "ndcg_cut_2"}
    cut = {q: dict(sorted(docs.items(), key=lambda d: -d[1])[:10]) for q, docs in RUN.items()}
    measured = pytrec_eval.RelevanceEvaluator(QRELS, {"recip_rank", "P.2", "ndcg_cut.2"}, relevance_level=level)
    values = measured.evaluate(cut)
    return {key: sum(values.get(q, {}).get(name, 0.0) for q in qids) / len(qids) for key, name in names.items()}


def test_official_ikat_without_relevance_level_counts_grade_2():
    chosen = choose("official:ikat", None)  # score --qrels Q --protocol official:ikat: no card, no level given
    assert (chosen.protocol.name, chosen.relevance_level) == ("ikat", 2)
    scores = chosen.protocol.score(QRELS, RUN, MEASURES, chosen.relevance_level).scores()
    assert scores == pytest.approx(OFFICIAL_IKAT, abs=1e-12)
    assert scores == pytest.approx(pytrec_means(2, list(QRELS)), abs=1e-12)
    assert pytrec_means(1, list(QRELS)) == pytest.approx({**OFFICIAL_IKAT, **AT_GRADE_1}, abs=1e-12)  # the slip
    assert choose("official:trec-cast", None).relevance_level == 2


@pytest.mark.parametrize("name,level", [("ikat", 2), ("trec-cast", 2), ("ikat-ptkb", 1), ("mtrag", 1), ("bridge", 1)])
def test_a_contradicting_relevance_level_is_refused_naming_both(name, level):
    other = 1 if level == 2 else 2
    with pytest.raises(UserInputError) as refused:
        choose(f"official:{name}", other)
    message = str(refused.value)
    assert f"--relevance-level {other}" in message and f"grade >= {level}" in message
    assert "--protocol trec_eval" in message  # the way to a custom threshold
    assert choose(f"official:{name}", level).relevance_level == level  # agreeing with it is fine
    with pytest.raises(UserInputError, match=f"grade >= {level}"):  # and never through the scorer either
        PROTOCOLS[name].score(QRELS, RUN, MEASURES, other)


def test_trec_eval_takes_any_relevance_level():
    assert choose("trec_eval", 3).relevance_level == 3
    assert choose(None, None).protocol.name == "trec_eval" and choose(None, None).relevance_level == 1
    ikat = builtin_cards()["ikat-2023"]
    assert choose("trec_eval", None, ikat).relevance_level == 2  # the card's level
    assert choose("trec_eval", 1, ikat).relevance_level == 1


def test_mtrag_predictions_refuse_another_threshold(tmp_path):
    with pytest.raises(UserInputError, match="--relevance-level 2 contradicts --protocol official:mtrag"):
        score_predictions(tmp_path / "never-read.jsonl", tmp_path, MEASURES, relevance_level=2)


def test_a_task_defaults_to_its_cards_official_protocol():
    cards = builtin_cards()
    for name, protocol, level in [
        ("ikat-2023", "official:ikat", 2),
        ("ikat-2024", "official:ikat", 2),
        ("ikat-2023-ptkb", "official:ikat-ptkb", 1),  # binary (0/1) statement judgments
        ("trec-cast-2022", "official:trec-cast", 2),
        ("mtrag-govt", "official:mtrag", 1),
        ("trec-cast-2019", "trec_eval", 2),  # no official protocol: trec_eval at the card's level
        ("mtrbench-sample", "trec_eval", 1),
    ]:
        chosen = choose(None, None, cards[name])
        assert (chosen.protocol.setting, chosen.relevance_level) == (protocol, level), name
        assert for_card(None, cards[name]).setting == protocol, name  # eval's choice is the same


def test_every_card_agrees_with_its_official_threshold():
    for name, card in builtin_cards().items():
        if card.official_protocol is not None:
            assert choose("official", None, card).relevance_level == card.relevance_level, name


def test_a_card_contradicting_its_official_threshold_is_refused():
    card = card_from_dict(
        {
            "name": "my-ikat",
            "description": "d",
            "format": "ikat",
            "source": {"path": "."},
            "splits": ["test"],
            "eval_split": "test",
            "main_score": "ndcg_at_5",
            "metrics": ["ndcg"],
            "k_values": [5],
            "relevance_level": 1,
            "official_protocol": "ikat",
            "protocol": "official",
        },
        "my-ikat.yaml",
    )
    with pytest.raises(UserInputError, match="task 'my-ikat': its card's relevance_level 1 contradicts official:ikat"):
        for_card(None, card)
    assert choose("trec_eval", None, card).relevance_level == 1


def test_official_choices_name_every_registered_protocol():
    assert official_choices() == (
        "official:mtrag",
        "official:bridge",
        "official:mtr-suite",
        "official:ikat",
        "official:ikat-ptkb",
        "official:trec-cast",
    )


# ---------------------------------------------------------------- which turns each protocol leaves out
def test_trec_eval_itself_leaves_no_judged_turn_out():
    """pytrec_eval (trec_eval's code) returns every judged turn the run answers: t3 (all grade 0) with 0 everywhere,
    t2 (grade 1 only, at level 2) with binary measures 0 and nDCG from its grade-1 gain."""
    values = pytrec_eval.RelevanceEvaluator(QRELS, {"recip_rank", "ndcg_cut.2"}, relevance_level=2).evaluate(RUN)
    assert set(values) == {"t1", "t2", "t3"}
    assert values["t3"] == {"recip_rank": 0.0, "ndcg_cut_2": 0.0}
    assert values["t2"] == {"recip_rank": 0.0, "ndcg_cut_2": 1.0}


def test_trec_eval_protocol_leaves_out_only_turns_without_a_judgment_above_0():
    """mtrbench's trec_eval protocol at level 2 leaves out t3 (every judgment grade 0), not t2 (grade 1 only, below
    the level): t2 is scored as trec_eval scores it; t4, absent from the run, scores 0 (docs/protocols.md)."""
    evaluation = PROTOCOLS["trec_eval"].score(QRELS, RUN, MEASURES, 2)
    assert evaluation.excluded == ["t3"]
    assert sorted(evaluation.per_query) == ["t1", "t2", "t4"]
    assert evaluation.per_query["t2"] == {"mrr_at_10": 0.0, "precision_at_2": 0.0, "ndcg_at_2": 1.0}
    assert evaluation.scores() == pytest.approx(pytrec_means(2, ["t1", "t2", "t4"]), abs=1e-12)
    official = PROTOCOLS["ikat"].score(QRELS, RUN, MEASURES, 2)
    assert official.excluded == [] and sorted(official.per_query) == ["t1", "t2", "t3", "t4"]
    assert official.per_query["t3"] == {"mrr_at_10": 0.0, "precision_at_2": 0.0, "ndcg_at_2": 0.0}


# ------------------------------------------------------------------------------------ tasks show --stats
def test_stats_count_relevant_passages_at_the_cards_level():
    queries = [
        ConversationalQuery(qid, "c", n, (), f"question {n}", qrels=dict(QRELS[qid]))
        for n, qid in enumerate(QRELS, start=1)
    ]
    task = TaskData("t", "test", Corpus([], [], []), queries)
    at_2 = task_stats(task, relevance_level=2)
    # grade >= 2 per turn: t1 1 (a), t2 0, t3 0, t4 1 (h)
    assert at_2["relevance_level"] == 2 and at_2["queries_without_gold"] == 2
    assert at_2["relevant_per_query"] == {"mean": 1.0, "median": 1.0, "min": 1, "max": 1}
    # grade >= 1: t1 2 (a, b), t2 1 (d), t3 0, t4 1
    at_1 = task_stats(task, relevance_level=1)
    assert at_1["queries_without_gold"] == 1
    assert at_1["relevant_per_query"] == {"mean": 1.33, "median": 1, "min": 1, "max": 2}
