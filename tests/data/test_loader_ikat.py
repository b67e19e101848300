"""TREC iKAT 2023-2025 and CAsT 2022 loaders, `tasks show --stats`, and the official:ikat protocol.

Topics: the published files (bundled, MIT). Qrels and runs: built in the published formats with invented passage ids
(tests/data/ikat_fixtures.py), since NIST's qrels and the submitted runs are not reachable offline.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
import pytrec_eval
import yaml

from mtrbench.cli import main
from mtrbench.data import load_task
from tests.data.ikat_fixtures import TASKS, ranked_run, topics, turn_ids, write_qrels


@pytest.fixture
def data_2023(tmp_path) -> tuple[Path, dict]:
    qids = turn_ids(2023)[::2][:60]
    qrels = write_qrels(tmp_path / "2023-qrels.all-turns.txt", qids)
    return tmp_path, qrels


def test_ikat_2023_turns_history_ptkb(data_2023):
    folder, qrels = data_2023
    task = load_task("ikat-2023", data_dir=folder, require_corpus=False)
    raw = topics(2023)
    assert len(raw) == 25 and len(task.queries) == sum(len(t["turns"]) for t in raw) == 332
    expected = []
    for topic in raw:
        history: list[str] = []
        for turn in topic["turns"]:
            expected.append((f"{topic['number']}_{turn['turn_id']}", topic["number"], list(history), turn))
            history += [turn["utterance"].strip(), turn["response"]]
    for q, (qid, number, history, turn) in zip(task.queries, expected):
        assert (q.qid, q.conversation_id, q.turn_id) == (qid, number, turn["turn_id"])
        assert [m.content for m in q.history] == history
        assert [m.role for m in q.history] == ["user", "assistant"] * (len(history) // 2)
        assert q.query == turn["utterance"].strip() and q.gold_rewrite == (turn["resolved_utterance"].strip() or None)
        assert q.meta["ptkb_provenance"] == [str(p) for p in turn["ptkb_provenance"]]
        assert q.qrels == qrels.get(qid, {})
    first = task.queries[0]
    assert first.meta["ptkb"]["2"] == "Because of my kidney problem, I have to drink water frequently to stay hydrated."


def test_ikat_2025_layout(tmp_path):
    task = load_task("ikat-2025", require_corpus=False)
    raw = topics(2025)
    assert len(task.queries) == sum(len(t["responses"]) for t in raw) == 188
    by_qid = {q.qid: q for q in task.queries}
    for topic in raw:
        for turn in topic["responses"]:
            q = by_qid[f"{topic['number']}_{turn['turn_id']}"]
            assert q.query == turn["user_utterance"].strip()
            assert [q.meta["ptkb"][sid] for sid in q.meta["ptkb_provenance"]] == turn["relevant_ptkbs"]
            assert list(q.meta["ptkb"].values()) == topic["ptkb"]
            assert q.meta["response_provenance"] == turn["citations"]


def test_ikat_2024_integer_numbers():
    with pytest.raises(Exception, match="2024-qrels.txt"):
        load_task("ikat-2024", require_corpus=False)
    task = load_task("ikat-2023-train", require_corpus=False)
    assert len(task.queries) == 95 and task.queries[0].qid == "1-1_1"


def test_stats_equal_an_independent_count(data_2023, capsys):
    folder, _ = data_2023
    assert main(["tasks", "show", "ikat-2023", "--data-dir", str(folder), "--stats"]) == 0
    stats = yaml.safe_load(capsys.readouterr().out)["stats"]
    raw = topics(2023)
    lines = [line.split() for line in (folder / "2023-qrels.all-turns.txt").read_text().splitlines() if line]
    grades = Counter(int(parts[3]) for parts in lines)
    statements = [len(t["ptkb"]) for t in raw]
    assert stats["conversations"] == len(raw)
    assert stats["turns"] == sum(len(t["turns"]) for t in raw)
    assert stats["judged_turns"] == len({parts[0] for parts in lines})
    assert stats["judgments"] == len(lines)
    assert stats["judgments_per_grade"] == dict(grades)
    assert stats["statements_per_conversation"] == {
        "mean": round(sum(statements) / len(statements), 2),
        "min": min(statements),
        "max": max(statements),
        "total": sum(statements),
    }


def one_error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_missing_files_name_each_and_where(tmp_path, capsys):
    message = one_error(capsys, ["tasks", "show", "ikat-2023", "--data-dir", str(tmp_path), "--stats"])
    assert "2023-qrels.all-turns.txt" in message and "trec.nist.gov/data/ikat2023.html" in message
    message = one_error(capsys, ["tasks", "show", "trec-cast-2022", "--data-dir", str(tmp_path), "--stats"])
    assert "2022-qrels.txt" in message and "trec.nist.gov" in message


def test_qrels_of_another_year(tmp_path, capsys):
    write_qrels(tmp_path / "2024-qrels.txt", turn_ids(2023)[:5])  # 2023 turn ids under the 2024 name
    message = one_error(capsys, ["tasks", "show", "ikat-2024", "--data-dir", str(tmp_path), "--stats"])
    assert "2024-qrels.txt record 0" in message and "another year" in message


def test_2025_topics_read_as_2024(tmp_path, capsys):
    shutil.copy(TASKS / "ikat" / "2025_test_topics.json", tmp_path / "2024_test_topics.json")
    write_qrels(tmp_path / "2024-qrels.txt", turn_ids(2024)[:5])
    message = one_error(capsys, ["tasks", "show", "ikat-2024", "--data-dir", str(tmp_path), "--stats"])
    assert "2024_test_topics.json record 0" in message and "2025 topics file" in message


def test_cast_2022_tree_paths(tmp_path):
    raw = json.loads((TASKS / "trec-cast-2022" / "2022_evaluation_topics_tree_v1.0.json").read_text())
    users = [(t, turn) for t in raw for turn in t["turn"] if turn["participant"] == "User"]
    write_qrels(tmp_path / "2022-qrels.txt", [f"{t['number']}_{turn['number']}" for t, turn in users[:20]])
    task = load_task("trec-cast-2022", data_dir=tmp_path, require_corpus=False)
    assert len(raw) == 18 and len(task.queries) == len(users) == 205
    # hand-read: topic 132's turn 2-1 follows system turn 1-4, on the path 1-1, 1-2, 1-3, 1-4
    q = next(q for q in task.queries if q.qid == "132_2-1")
    turns = {turn["number"]: turn for turn in raw[0]["turn"]}
    assert [m.content for m in q.history] == [
        turns["1-1"]["utterance"],
        turns["1-2"]["response"],
        turns["1-3"]["utterance"],
        turns["1-4"]["response"],
    ]
    assert q.turn_id == 3 and q.meta["response_provenance"] == turns["1-4"]["provenance"]


# ------------------------------------------------------------------------------------------ official:ikat


def pytrec_means(qrels: dict, run: dict[str, dict[str, float]]) -> dict[str, float]:
    """The track's conventions with pytrec_eval directly: graded nDCG on raw grades, binary measures at grade >= 2,
    the mean over every judged turn (missing from the run: 0)."""
    graded = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.3,5"}).evaluate(run)
    binary = pytrec_eval.RelevanceEvaluator(qrels, {"P.20", "map", "recip_rank"}, relevance_level=2).evaluate(run)
    fields = {
        "ndcg_at_3": (graded, "ndcg_cut_3"),
        "ndcg_at_5": (graded, "ndcg_cut_5"),
        "precision_at_20": (binary, "P_20"),
        "map_at_1000": (binary, "map"),
        "mrr_at_1000": (binary, "recip_rank"),
    }
    return {
        key: sum(src.get(qid, {}).get(name, 0.0) for qid in qrels) / len(qrels) for key, (src, name) in fields.items()
    }


def write_trec_run(path: Path, run: dict[str, list[tuple[str, float]]]) -> None:
    lines = [
        f"{qid} Q0 {doc} {rank} {score} fixture"
        for qid, ranked in run.items()
        for rank, (doc, score) in enumerate(ranked, 1)
    ]
    path.write_text("\n".join(lines) + "\n")


def test_official_ikat_equals_pytrec_eval(data_2023, tmp_path, capsys):
    folder, qrels = data_2023
    judged = list(qrels)
    answered = judged[3:] + turn_ids(2023)[1:8:2]  # three judged turns missing, a few unjudged ones present
    ranked = ranked_run(qrels, answered)
    write_trec_run(tmp_path / "run.trec", ranked)
    out = tmp_path / "scores.json"
    argv = ["score", "--run", str(tmp_path / "run.trec"), "--task", "ikat-2023", "--data-dir", str(folder)]
    argv += ["--protocol", "official:ikat", "--metrics", "nDCG@3,nDCG@5,P@20,MAP@1000,MRR@1000", "--output", str(out)]
    assert main(argv) == 0
    capsys.readouterr()
    scores = json.loads(out.read_text())["scores"]
    run = {qid: {doc: score for doc, score in docs} for qid, docs in ranked.items()}
    expected = pytrec_means(qrels, run)
    assert json.loads(out.read_text())["queries"]["evaluated"] == len(qrels)
    for key, value in expected.items():
        assert scores[key] == pytest.approx(value, abs=1e-12), key
    assert expected["ndcg_at_3"] > 0 and expected["precision_at_20"] > 0


# ------------------------------------------------------------------------------------------ PTKB ranking


def ptkb_run(seed: int = 5) -> dict[str, list[tuple[str, float]]]:
    """Every 2023 turn's statements ranked at random (ties included), by published statement id."""
    import random

    rng = random.Random(seed)
    run = {}
    for topic in topics(2023):
        for turn in topic["turns"][::1]:
            ranked = [(sid, float(rng.randrange(4))) for sid in topic["ptkb"]]
            run[f"{topic['number']}_{turn['turn_id']}"] = sorted(ranked, key=lambda p: -p[1])
    del run["9-1_1"]  # a judged turn missing from the run
    return run


@pytest.mark.parametrize("split,published", [("nist", "ptkb_rel_nist"), ("org", "ptkb_rel_org")])
def test_ptkb_ranking_equals_pytrec_eval(split, published, tmp_path, capsys):
    ranked = ptkb_run()
    topic_of = {f"{t['number']}_{turn['turn_id']}": t["number"] for t in topics(2023) for turn in t["turns"]}
    as_docs = {qid: [(f"{topic_of[qid]}:{sid}", s) for sid, s in docs] for qid, docs in ranked.items()}
    write_trec_run(tmp_path / "ptkb.trec", as_docs)
    out = tmp_path / "scores.json"
    argv = ["score", "--run", str(tmp_path / "ptkb.trec"), "--task", "ikat-2023-ptkb", "--split", split]
    argv += ["--protocol", "official", "--metrics", "nDCG@3,P@3,R@3,MAP@100,MRR@100", "--output", str(out)]
    assert main(argv) == 0
    capsys.readouterr()
    scores = json.loads(out.read_text())["scores"]
    qrels: dict[str, dict[str, int]] = {}
    for line in (TASKS / "ikat" / published).read_text().splitlines():
        if line.strip():
            qid, _, sid, grade = line.split()
            qrels.setdefault(qid, {})[sid] = int(grade)
    run = {qid: {sid: s for sid, s in docs} for qid, docs in ranked.items()}
    evaluated = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.3", "P.3", "recall.3", "map", "recip_rank"}).evaluate(
        run
    )
    fields = {"ndcg_at_3": "ndcg_cut_3", "precision_at_3": "P_3", "recall_at_3": "recall_3"}
    fields |= {"map_at_100": "map", "mrr_at_100": "recip_rank"}
    assert len(qrels) == (98 if split == "nist" else 112)
    for key, name in fields.items():
        expected = sum(evaluated.get(qid, {}).get(name, 0.0) for qid in qrels) / len(qrels)
        assert scores[key] == pytest.approx(expected, abs=1e-12), key


def test_official_trec_cast_2022_equals_pytrec_eval(tmp_path, capsys):
    raw = json.loads((TASKS / "trec-cast-2022" / "2022_evaluation_topics_tree_v1.0.json").read_text())
    qids = [f"{t['number']}_{turn['number']}" for t in raw for turn in t["turn"] if turn["participant"] == "User"]
    qrels = write_qrels(tmp_path / "2022-qrels.txt", qids[:40:2])
    ranked = ranked_run(qrels, qids[4:60])
    write_trec_run(tmp_path / "run.trec", ranked)
    out = tmp_path / "scores.json"
    argv = ["score", "--run", str(tmp_path / "run.trec"), "--task", "trec-cast-2022", "--data-dir", str(tmp_path)]
    argv += ["--protocol", "official", "--metrics", "nDCG@3,nDCG@5,P@20,MAP@1000,MRR@1000", "--output", str(out)]
    assert main(argv) == 0
    capsys.readouterr()
    report = json.loads(out.read_text())
    assert report["protocol"] == "official:trec-cast"
    expected = pytrec_means(qrels, {qid: dict(docs) for qid, docs in ranked.items()})
    for key, value in expected.items():
        assert report["scores"][key] == pytest.approx(value, abs=1e-12), key
