"""TREC iKAT run files: `score --predictions RUN.json --task ikat-*`, `eval --ikat-out`, the re-implemented structural
checks. Runs and qrels are built in the published formats with invented passages (tests/data/ikat_fixtures.py):
no NIST qrels or submitted run is reachable offline."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from mtrbench.cli import main
from mtrbench.data import load_task
from mtrbench.formats.ikat_run import TurnOutput, check_run, ikat_document, read_ikat_run
from mtrbench.results.ikat_out import topic_turns
from tests.data.ikat_fixtures import ikat_json_run, passage, ranked_run, topics, turn_ids, write_qrels
from tests.data.test_loader_ikat import pytrec_means


@pytest.fixture
def judged(tmp_path) -> tuple[Path, dict, list[str]]:
    """Qrels for every turn of the first two 2023 conversations, in a --data-dir folder."""
    raw = topics(2023)[:2]
    qids = [f"{t['number']}_{turn['turn_id']}" for t in raw for turn in t["turns"]]
    data = tmp_path / "data"
    data.mkdir()
    return data, write_qrels(data / "2023-qrels.all-turns.txt", qids), qids


def one_error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_score_official_json_run_equals_pytrec_eval(judged, tmp_path, capsys):
    data, qrels, qids = judged
    ranked = ranked_run(qrels, qids[2:] + turn_ids(2023)[20:24])  # two judged turns missing, four unjudged present
    path = tmp_path / "run.json"
    path.write_text(json.dumps(ikat_json_run(ranked)))
    out = tmp_path / "scores.json"
    argv = ["score", "--predictions", str(path), "--task", "ikat-2023", "--data-dir", str(data), "--output", str(out)]
    assert main([*argv, "--metrics", "nDCG@3,nDCG@5,P@20,MAP@1000,MRR@1000"]) == 0
    capsys.readouterr()
    report = json.loads(out.read_text())
    assert report["protocol"] == "official:ikat"  # the card's default
    expected = pytrec_means(qrels, {qid: dict(docs) for qid, docs in ranked.items()})
    for key, value in expected.items():
        assert report["scores"][key] == pytest.approx(value, abs=1e-12), key
    # the checks: the run answers 42 of 332 turns (an error for a submission, not for scoring)
    assert any("turns" in e for e in report["ikat_checks"]["errors"])


def test_unknown_turn_ids(judged, tmp_path, capsys):
    data, qrels, qids = judged
    ranked = ranked_run(qrels, qids[:3])
    ranked["99-9_1"] = ranked.pop(qids[1])
    path = tmp_path / "run.json"
    path.write_text(json.dumps(ikat_json_run(ranked)))
    message = one_error(capsys, ["score", "--predictions", str(path), "--task", "ikat-2023", "--data-dir", str(data)])
    assert "run.json turn 2" in message and "99-9_1" in message


def test_ptkb_ranking_from_ptkb_provenance(tmp_path, capsys):
    rng = random.Random(9)
    ranked, ptkb = {}, {}
    for topic in topics(2023):
        for turn in topic["turns"]:
            qid = f"{topic['number']}_{turn['turn_id']}"
            ranked[qid] = [(passage(rng), 1.0)]
            ptkb[qid] = sorted(((sid, float(rng.randrange(5))) for sid in topic["ptkb"]), key=lambda p: -p[1])
    path = tmp_path / "run.json"
    path.write_text(json.dumps(ikat_json_run(ranked, ptkb)))
    out = tmp_path / "scores.json"
    argv = ["score", "--predictions", str(path), "--task", "ikat-2023-ptkb", "--split", "org", "--output", str(out)]
    assert main([*argv, "--metrics", "nDCG@3,P@3"]) == 0
    capsys.readouterr()
    import pytrec_eval

    qrels: dict = {}
    for line in (Path(__file__).resolve().parents[2] / "tasks/ikat/ptkb_rel_org").read_text().splitlines():
        qid, _, sid, grade = line.split()
        qrels.setdefault(qid, {})[sid] = int(grade)
    values = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.3", "P.3"}).evaluate(
        {q: dict(d) for q, d in ptkb.items()}
    )
    scores = json.loads(out.read_text())["scores"]
    assert scores["ndcg_at_3"] == pytest.approx(sum(v["ndcg_cut_3"] for v in values.values()) / len(qrels))
    assert scores["precision_at_3"] == pytest.approx(sum(v["P_3"] for v in values.values()) / len(qrels))


@pytest.fixture
def corpus(judged, tmp_path) -> Path:
    _, qrels, _ = judged
    rng = random.Random(4)
    words = "diet vegan protein soy milk heart water kidney exercise phone android series".split()
    docs = {d for docs in qrels.values() for d in docs} | {passage(rng) for _ in range(40)}
    path = tmp_path / "passages.jsonl"
    path.write_text(
        "".join(json.dumps({"id": d, "contents": " ".join(rng.choices(words, k=12))}) + "\n" for d in sorted(docs))
    )
    return path


@pytest.mark.slow
def test_eval_ikat_out_passes_the_checks_and_scores_back(judged, corpus, tmp_path, capsys):
    data, _, _ = judged
    out = tmp_path / "run.json"
    argv = ["eval", "--model", "bm25", "--task", "ikat-2023", "--data-dir", str(data), "--corpus", str(corpus)]
    argv += ["--ptkb", "gold", "--output-dir", str(tmp_path / "results"), "--quiet", "--ikat-out", str(out)]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "structural checks passed" in err
    result = json.loads(next((tmp_path / "results").rglob("ikat-2023.json")).read_text())
    ikat = read_ikat_run(out)
    task = load_task("ikat-2023", data_dir=data, corpus_path=corpus)
    checks = check_run(ikat, topic_turns(task), 2023)
    assert checks.passed and len(ikat.turns) == 332
    gold = {q.qid: [str(s) for s in q.meta["ptkb_provenance"]] for q in task.queries}
    assert all(sorted(s for s, _ in t.responses[0].ptkb) == sorted(gold[t.turn_id]) for t in ikat.turns)
    scored = tmp_path / "scores.json"
    argv = ["score", "--predictions", str(out), "--task", "ikat-2023", "--data-dir", str(data), "--output", str(scored)]
    assert main([*argv, "--metrics", ",".join(result["mtrbench"]["settings"]["metrics"])]) == 0
    capsys.readouterr()
    again = json.loads(scored.read_text())["scores"]
    for key, value in result["scores"]["test"][0].items():
        if key in again:
            assert again[key] == pytest.approx(value, abs=1e-9), key


def test_ikat_out_refuses_other_tasks(capsys):
    message = one_error(capsys, ["eval", "--model", "bm25", "--task", "trec-cast-2019", "--ikat-out", "x.json"])
    assert "not ikat-2023/2024/2025" in message


def test_checks_errors_warnings_and_passage_db(tmp_path):
    task = load_task("ikat-2024", data_dir=_qrels_2024(tmp_path), require_corpus=False)
    turns = [
        TurnOutput(
            q.qid, [(f"clueweb22-en0001-02-00003:{i}", 1.0 - i / 10) for i in range(3)], "an answer", [("1", "", 1.0)]
        )
        for q in task.queries
    ]
    turns[0] = TurnOutput(turns[0].turn_id, [("msmarco_1", 0.1), ("clueweb22-x:1", 0.5)], "", [("99", "", 1.0)])
    path = tmp_path / "run.json"
    path.write_text(ikat_document(turns, 2024, "r", "automatic", {}))
    run = read_ikat_run(path)
    assert run.year == 2024 and run.turns[1].responses[0].ptkb == [("1", 1.0)]
    db = tmp_path / "ids.sqlite3"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE passage_ids (id TEXT PRIMARY KEY NOT NULL)")
        connection.execute("INSERT INTO passage_ids VALUES ('clueweb22-en0001-02-00003:0')")
    checks = check_run(run, topic_turns(task), 2024, db)
    assert checks.errors == [f"turn {turns[0].turn_id} response 0: PTKB provenance '99' is no statement of topic 0"]
    text = "\n".join(checks.warnings)
    assert "msmarco_1 lacks the 'clueweb22-' prefix" in text and "scores above the one before it" in text
    assert "no response text" in text and "passage clueweb22-en0001-02-00003:1 is not in the collection" in text
    assert "clueweb22-en0001-02-00003:0 is not" not in text


def _qrels_2024(tmp_path: Path) -> Path:
    folder = tmp_path / "d2024"
    folder.mkdir()
    write_qrels(folder / "2024-qrels.txt", turn_ids(2024)[:4])
    return folder


def test_2025_layout_round_trip(tmp_path):
    task = load_task("ikat-2025", require_corpus=False)
    turns = [
        TurnOutput(q.qid, [("clueweb22-en0001-02-00003:1", 2.0), ("clueweb22-en0001-02-00004:0", 1.0)], "ok")
        for q in task.queries
    ]
    path = tmp_path / "run.jsonl"
    path.write_text(ikat_document(turns, 2025, "team", "automatic", {}))
    run = read_ikat_run(path)
    assert run.year == 2025 and run.passage_run()[turns[0].turn_id] == {
        "clueweb22-en0001-02-00003:1": 2.0,
        "clueweb22-en0001-02-00004:0": 1.0,
    }
    assert check_run(run, topic_turns(task), 2025).passed
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[1:]) + "\n")
    assert check_run(read_ikat_run(path), topic_turns(task), 2025).errors == [f"missing turn id {turns[0].turn_id}"]


@pytest.mark.slow
def test_generate_ikat_out_carries_answers_and_passages(judged, corpus, tmp_path, capsys):
    from llm_server import Reply, ScriptedChatServer

    data, _, _ = judged
    results = tmp_path / "results"
    argv = ["eval", "--model", "bm25", "--task", "ikat-2023", "--data-dir", str(data), "--corpus", str(corpus)]
    assert main([*argv, "--limit", "1", "--output-dir", str(results), "--quiet"]) == 0
    result = next(results.rglob("ikat-2023.json"))

    def answer(body: dict) -> Reply:
        question = body["messages"][-1]["content"].rsplit("Current question: ", 1)[1].strip()
        return Reply(f"An answer to: {question} [1]")

    out = tmp_path / "gen.jsonl"
    run_file = tmp_path / "answers.json"
    with ScriptedChatServer(answer) as server:
        code = main(
            [
                "generate", "--task", "ikat-2023", "--data-dir", str(data), "--corpus", str(corpus), "--run", str(result),
                "--limit", "1", "--model", "gen", "--base-url", server.base_url, "--output", str(out),
                "--ikat-out", str(run_file), "--yes", "--no-llm-cache", "--quiet",
            ]
        )  # fmt: skip
    assert code == 0
    assert "structural checks passed" in capsys.readouterr().out
    generations = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    ikat = read_ikat_run(run_file)
    by_turn = {t.turn_id: t for t in ikat.turns}
    assert len(generations) == 6 and len(by_turn) == 332
    eval_run = json.loads(result.read_text())  # the run beside the result
    trec = next(results.rglob("*.run.trec")).read_text().splitlines()
    ranked: dict[str, list[str]] = {}
    for line in trec:
        qid, _, doc, _, _, _ = line.split()
        ranked.setdefault(qid, []).append(doc)
    for g in generations:
        response = by_turn[g["qid"]].responses[0]
        assert response.text == g["answer"] and response.text.startswith("An answer to: ")
        assert [doc for doc, _, _ in response.passages] == ranked[g["qid"]]
        assert {doc for doc, _, used in response.passages if used} == set(g["passages"])
    assert eval_run["mtrbench"]["settings"]["history"] == "full"
