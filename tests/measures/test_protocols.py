"""Official scoring protocols (docs/protocols.md) against hand-worked values of each benchmark's own code.

MTRAG: IBM/mt-rag-benchmark scripts/evaluation/run_retrieval_eval.py (compute_results, main's "all" row); its
values on the run below were worked by hand here and match the script run on the same inputs (the script
itself runs in test_official_mtrag_script_itself when MTRAG_BENCHMARK_DIR names a clone).
BRIDGE: DISL-Lab/BRIDGE-Benchmark retrieval/evaluation.py (eval_precision, eval_ndcg), worked by hand.
"""

from __future__ import annotations

import copy
import csv
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mtrbench.data.cards import builtin_cards, card_from_dict
from mtrbench.data.model import ASSISTANT, USER, ConversationalQuery, Message
from mtrbench.infra.errors import MtrbenchError, UserInputError
from mtrbench.leaderboard.keys import comparability
from mtrbench.measures import evaluate, parse_measures
from mtrbench.measures.protocols import PROTOCOLS, CollectionRow, all_row, resolve, score_bridge, score_mtrag
from mtrbench.pipeline.plan import EvalConfig, check_request
from mtrbench.results.overwrite import comparable_settings
from mtrbench.serialize.history import QueryFormat, get_strategy


def lg(rank: int) -> float:
    """The DCG discount of a 1-based rank."""
    return 1 / math.log2(rank + 1)


# ------------------------------------------------------------------------------------------------ MTRAG
# Collection A exercises every convention; collection B is a plain second collection for the "all" row.
QRELS_A = {
    "q1": {"d1": 1, "d2": 1},  # its own id is retrieved first: dropped
    "q2": {"d5": 0},  # judged, nothing relevant: kept with 0 (trec_eval protocol: excluded)
    "q3": {"d6": 1},  # judged, not in the run: skipped (trec_eval protocol: 0)
    "q4": {"d7": 1},
}
RUN_A = {
    "q1": {"q1": 0.99, "d3": 0.9, "d1": 0.8, "d2": 0.1},
    "q2": {"d5": 1.0},
    "q4": {"d7": 1.0},
    "q5": {"d1": 1.0},
}  # q5: a prediction without qrels; counts toward the collection's weight only
QRELS_B = {"r1": {"e1": 1}}
RUN_B = {"r1": {"e2": 0.9, "e1": 0.5}}
MTRAG_MEASURES = parse_measures(["ndcg", "recall"], [1, 3, 5])

Q1_NDCG3 = (lg(2) + lg(3)) / (lg(1) + lg(2))  # d3, d1, d2 after dropping q1: relevant at ranks 2 and 3
A_NDCG3 = round((Q1_NDCG3 + 0 + 1) / 3, 5)  # q1, q2 (0), q4 (1); q3 skipped
B_NDCG3 = round(lg(2), 5)


def test_mtrag_conventions_by_hand():
    evaluation = score_mtrag(copy.deepcopy(QRELS_A), copy.deepcopy(RUN_A), MTRAG_MEASURES, 1)
    assert list(evaluation.per_query) == ["q1", "q2", "q4"]
    assert evaluation.skipped == ["q3"] and evaluation.excluded == []
    assert evaluation.per_query["q1"]["ndcg_at_3"] == pytest.approx(Q1_NDCG3, abs=1e-12)
    assert evaluation.per_query["q2"] == {k: 0.0 for k in evaluation.metric_keys}
    scores = evaluation.scores()
    assert scores["ndcg_at_1"] == 0.33333 and scores["recall_at_1"] == 0.33333  # rounded, as the script rounds
    assert scores["ndcg_at_3"] == A_NDCG3 == 0.56448 and scores["ndcg_at_5"] == A_NDCG3
    assert scores["recall_at_3"] == scores["recall_at_5"] == 0.66667
    assert evaluation.mean(["q1"])["ndcg_at_3"] == pytest.approx(Q1_NDCG3)  # breakdowns stay unrounded


def test_mtrag_all_row_weights_collections_by_predictions():
    rows = [
        CollectionRow("a", score_mtrag(QRELS_A, RUN_A, MTRAG_MEASURES, 1).scores(), len(RUN_A)),
        CollectionRow("b", score_mtrag(QRELS_B, RUN_B, MTRAG_MEASURES, 1).scores(), len(RUN_B)),
    ]
    row = all_row(rows)
    assert row.count == 5  # 4 predictions of a (q5 unjudged included), 1 of b
    assert row.scores["ndcg_at_3"] == pytest.approx((A_NDCG3 * 4 + B_NDCG3 * 1) / 5, abs=1e-12)
    assert row.scores["recall_at_1"] == pytest.approx(0.33333 * 4 / 5, abs=1e-12)


def test_trec_eval_protocol_on_the_same_run_differs_as_documented():
    evaluation = evaluate(QRELS_A, RUN_A, MTRAG_MEASURES, relevance_level=1)
    assert sorted(evaluation.per_query) == ["q1", "q3", "q4"] and evaluation.excluded == ["q2"]
    q1 = lg(3) / (lg(1) + lg(2))  # q1 itself at rank 1, d3 at 2, d1 at 3
    assert evaluation.scores()["ndcg_at_3"] == pytest.approx((q1 + 0 + 1) / 3, abs=1e-12)


@pytest.mark.skipif(
    not os.environ.get("MTRAG_BENCHMARK_DIR"),
    reason="MTRAG_BENCHMARK_DIR (a clone of IBM/mt-rag-benchmark) not set: the official script "
    "is not vendored; its values are transcribed in the tests above",
)
def test_official_mtrag_script_itself(tmp_path):
    pytest.importorskip("pandas")
    scripts = Path(os.environ["MTRAG_BENCHMARK_DIR"]) / "scripts" / "evaluation"
    work = tmp_path / "scripts" / "evaluation"
    shutil.copytree(scripts, work)
    collections = {
        "mt-rag-clapnq-elser-512-100-20240503": ("clapnq", QRELS_A, RUN_A),
        "mt-rag-govt-elser-512-100-20240611": ("govt", QRELS_B, RUN_B),
    }
    rows = []
    for name, (domain, qrels, run) in collections.items():
        folder = tmp_path / "human" / "retrieval_tasks_convid" / domain / "qrels"
        folder.mkdir(parents=True)
        folder.joinpath("dev.tsv").write_text(
            "query-id\tcorpus-id\tscore\n"
            + "".join(f"{q}\t{d}\t{g}\n" for q, docs in qrels.items() for d, g in docs.items())
        )
        rows += [
            {"task_id": q, "Collection": name, "contexts": [{"document_id": d, "score": s} for d, s in docs.items()]}
            for q, docs in run.items()
        ]
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = subprocess.run(
        [
            sys.executable,
            "run_retrieval_eval.py",
            "--input_file",
            str(predictions),
            "--output_file",
            str(tmp_path / "out.jsonl"),
        ],
        cwd=work,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "out_aggregate.csv") as handle:
        table = {r["collection"]: r for r in csv.DictReader(handle)}
    ours = {
        "clapnq": score_mtrag(QRELS_A, RUN_A, MTRAG_MEASURES, 1).scores(),
        "govt": score_mtrag(QRELS_B, RUN_B, MTRAG_MEASURES, 1).scores(),
    }
    mine = all_row([CollectionRow(d, ours[d], len(run)) for d, _, run in collections.values()])
    for name, (domain, _, _) in [*collections.items(), ("all", ("all", None, None))]:
        scores = mine.scores if domain == "all" else ours[domain]
        official = json.loads(table[name]["nDCG"]), json.loads(table[name]["Recall"])
        assert official[0] == pytest.approx([scores[f"ndcg_at_{k}"] for k in (1, 3, 5)], abs=1e-12)
        assert official[1] == pytest.approx([scores[f"recall_at_{k}"] for k in (1, 3, 5)], abs=1e-12)


# ----------------------------------------------------------------------------------------------- BRIDGE
BRIDGE_QRELS = {"b1": {"x1": 1, "x2": 1, "x3": 1}, "b2": {"y1": 1}, "b3": {"z1": 2, "z2": 1}, "b4": {"w1": 0}}
BRIDGE_RUN = {
    "b1": {"x1": 0.9, "n1": 0.8, "x2": 0.7, "n2": 0.6, "n3": 0.5, "x3": 0.4},
    "b2": {"y1": 0.9, "n1": 0.1},  # two retrieved: P@5 divides by 2
    "b3": {"z2": 0.9, "z1": 0.8},
    "b4": {"w1": 1.0},
}


def test_bridge_precision_and_ndcg_by_hand():
    measures = parse_measures(["P@1", "P@5", "nDCG@1", "nDCG@5", "R@5", "Hit@5"], [1, 5])
    evaluation = score_bridge(BRIDGE_QRELS, BRIDGE_RUN, measures, 1)
    q = evaluation.per_query
    assert sorted(q) == ["b1", "b2", "b3"] and evaluation.excluded == ["b4"]  # BRIDGE skips empty doc_id lists
    assert q["b1"]["precision_at_5"] == 2 / 5 and q["b2"]["precision_at_5"] == 1 / 2
    ideal_b1 = lg(1) + lg(2) + lg(3)  # over all three relevant documents, not the best k
    assert q["b1"]["ndcg_at_1"] == pytest.approx(1 / ideal_b1)
    assert q["b1"]["ndcg_at_5"] == pytest.approx((lg(1) + lg(3)) / ideal_b1)
    assert q["b3"]["ndcg_at_5"] == pytest.approx(1.0)  # binary gains: grades 2 and 1 weigh alike
    assert q["b2"]["recall_at_5"] == 1.0 and q["b1"]["recall_at_5"] == 2 / 3 and q["b1"]["hit_rate_at_5"] == 1.0
    trec = evaluate(BRIDGE_QRELS, BRIDGE_RUN, measures, relevance_level=1).per_query
    assert trec["b2"]["precision_at_5"] == 1 / 5 and trec["b1"]["ndcg_at_1"] == 1.0  # what official changes
    assert trec["b3"]["ndcg_at_5"] == pytest.approx((1 + 2 * lg(2)) / (2 + lg(2)))


def test_bridge_query_absent_from_run_scores_zero():
    evaluation = score_bridge({"a": {"x": 1}, "b": {"y": 1}}, {"a": {"x": 1.0}}, parse_measures(["P@3"], [3]), 1)
    assert evaluation.per_query["b"]["precision_at_3"] == 0.0 and evaluation.per_query["a"]["precision_at_3"] == 1.0


# ---------------------------------------------------------------------------------------- MTR-SUITE
def _query(history: tuple[Message, ...]) -> ConversationalQuery:
    return ConversationalQuery(
        qid="c::2",
        conversation_id="c",
        turn_id=len(history) // 2 + 1,
        history=history,
        query="and its capital?",
        gold_rewrite=None,
        answers=(),
        qrels={"d": 1},
        meta={},
    )


def test_mtr_suite_first_turn_reads_user_prefixed():
    fmt = QueryFormat()
    full = get_strategy("full")
    official = full.with_first_turn_prefixed()
    assert full(_query(()), fmt).text() == "and its capital?"
    assert official(_query(()), fmt).text() == "User: and its capital?"
    history = (Message(USER, "Tell me about France"), Message(ASSISTANT, "France is a country."))
    assert (
        official(_query(history), fmt).text()
        == full(_query(history), fmt).text()
        == ("User: Tell me about France\nAgent: France is a country.\nUser: and its capital?")
    )
    current = get_strategy("current").with_first_turn_prefixed()  # unprefixed strategies stay bare
    assert current(_query(history), fmt).text() == "and its capital?"


# ------------------------------------------------------------------------------------- cards and plan
def test_cards_declare_their_official_protocol():
    cards = builtin_cards()
    expected = {
        "mtrag-": "mtrag",
        "mtragun-": "mtrag",
        "bridge-": "bridge",
        "mtr-bench": "mtr-suite",
        "ikat-2023-ptkb": "ikat-ptkb",  # binary statement judgments: its own threshold (grade >= 1)
        "ikat-": "ikat",
        "trec-cast-2022": "trec-cast",
    }
    for name, card in cards.items():
        wanted = next((p for prefix, p in expected.items() if name.startswith(prefix)), None)
        assert card.official_protocol == wanted, name
        assert card.protocol == ("official" if wanted else "trec_eval"), name


def test_resolve_protocol():
    assert resolve(None, "mtrag", "official", "t") is PROTOCOLS["mtrag"]
    assert resolve("trec_eval", "mtrag", "official", "t").name == "trec_eval"
    assert resolve(None, None, "trec_eval", "t").setting == "trec_eval"
    assert PROTOCOLS["bridge"].setting == "official:bridge"
    with pytest.raises(UserInputError, match="no official protocol"):
        resolve("official", None, "trec_eval", "sample")
    with pytest.raises(UserInputError, match="follows the official mtrag protocol"):
        resolve("official:bridge", "mtrag", "official", "t")
    with pytest.raises(UserInputError, match="unknown scoring protocol"):
        resolve("offical", "mtrag", "official", "t")


def _card(**extra):
    return card_from_dict(
        {
            "name": "x",
            "description": "d",
            "format": "mtrag",
            "source": {"path": "."},
            "splits": ["dev"],
            "eval_split": "dev",
            "main_score": "ndcg_at_5",
            "metrics": ["ndcg"],
            "k_values": [1, 5],
            **extra,
        },
        "x.yaml",
    )


def test_card_protocol_fields_are_checked():
    with pytest.raises(MtrbenchError, match="official_protocol 'trec' is not one of"):
        _card(official_protocol="trec")
    with pytest.raises(MtrbenchError, match="needs an official_protocol"):
        _card(protocol="official")


def test_check_request_refuses_measures_mtrag_does_not_define():
    card = _card(official_protocol="mtrag", protocol="official")
    assert check_request(EvalConfig(), card)[2].name == "mtrag"
    with pytest.raises(UserInputError, match="defines ndcg, recall"):
        check_request(EvalConfig(metrics=["ndcg", "hole_unjudged"]), card)
    plain = check_request(EvalConfig(metrics=["ndcg", "hole_unjudged"], protocol="trec_eval"), card)
    assert plain[2].name == "trec_eval"


def test_old_results_read_as_trec_eval_and_official_ranks_apart():
    old = {"history": "full", "truncate": "left"}
    assert comparable_settings(old) == comparable_settings({**old, "protocol": "trec_eval"})
    assert comparable_settings(old) != comparable_settings({**old, "protocol": "official:mtrag"})
    entry = {"label": "run", "source": {}, "settings": {"history": "full", "truncate": "left", "query_format": {}}}
    official = {**entry, "settings": {**entry["settings"], "protocol": "official:mtrag"}}
    assert comparability(entry) != comparability(official)
    assert comparability(entry) == comparability({**entry, "settings": {**entry["settings"], "protocol": "trec_eval"}})


# ------------------------------------------------------------------------- MTRAGEval Task A prediction files
def _predictions_folder(tmp_path: Path) -> tuple[Path, Path]:
    for domain, qrels in (("clapnq", QRELS_A), ("govt", QRELS_B)):
        folder = tmp_path / "mtrag-human" / "retrieval_tasks" / domain / "qrels"
        folder.mkdir(parents=True)
        folder.joinpath("dev.tsv").write_text(
            "query-id\tcorpus-id\tscore\n"
            + "".join(f"{q}\t{d}\t{g}\n" for q, docs in qrels.items() for d, g in docs.items())
        )
    rows = [
        {
            "task_id": "q4",
            "Collection": "mt-rag-clapnq-elser-512-100-20240503",  # replaced by its later line
            "contexts": [{"document_id": "zz", "score": 1.0}],
        }
    ]
    for name, run in (("mt-rag-clapnq-elser-512-100-20240503", RUN_A), ("mt-rag-govt-elser-512-100-20240611", RUN_B)):
        rows += [
            {"task_id": q, "Collection": name, "contexts": [{"document_id": d, "score": s} for d, s in docs.items()]}
            for q, docs in run.items()
        ]
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, tmp_path


def test_prediction_file_rows_and_all_row(tmp_path):
    from mtrbench.measures.protocols.mtrag_predictions import score_predictions

    path, folder = _predictions_folder(tmp_path)
    rows = score_predictions(path, folder, MTRAG_MEASURES)
    assert [(r.collection, r.count) for r in rows] == [
        ("mt-rag-clapnq-elser-512-100-20240503", 4),
        ("mt-rag-govt-elser-512-100-20240611", 1),
        ("all", 5),
    ]
    assert rows[0].scores["ndcg_at_3"] == A_NDCG3 and rows[1].scores["ndcg_at_3"] == B_NDCG3
    assert rows[2].scores["ndcg_at_3"] == pytest.approx((A_NDCG3 * 4 + B_NDCG3) / 5, abs=1e-12)


def test_prediction_file_problems_are_one_line(tmp_path):
    from mtrbench.measures.protocols.mtrag_predictions import qrels_file, read_predictions

    path = tmp_path / "p.jsonl"
    path.write_text('{"task_id": "a", "Collection": "govt", "contexts": [{"document_id": "d"}]}\n')
    with pytest.raises(MtrbenchError, match=r"p.jsonl:1: context 0 needs a 'document_id' and a numeric 'score'"):
        read_predictions(path)
    with pytest.raises(MtrbenchError, match=r"collection 'banking' is not one of MTRAG's"):
        qrels_file(tmp_path, "banking")
    with pytest.raises(MtrbenchError, match=r"no qrels for collection 'govt'"):
        qrels_file(tmp_path, "govt")
