"""`mtrbench simulate score` and the session measures: the HTTP system simulated and scored end to end with a
scripted UMBRELA judge, the in-process retriever + generator system, and measures equal to hand computations."""

from __future__ import annotations

import json
import math
from statistics import NormalDist

from cli_run import run_cli
from contract_server import ContractServer
from llm_server import Reply, ScriptedChatServer
from scripts import system_by_keyword, user_in_order

from mtrbench.simulate.measures import SessionScore, summarize
from mtrbench.simulate.score import session_score

LOG2_3 = math.log2(3)


def judge_reply(body):
    prompt = body["messages"][-1]["content"]
    if "14,000 years" in prompt:  # lake-age, ranked for "How deep ...", which the need does not judge
        return Reply("##final score: 1")
    if "toll of 6 crowns" in prompt:  # bridge-toll
        return Reply("##final score: 0")
    raise AssertionError("only the two unjudged passages are labelled")


def test_an_http_system_simulated_and_scored_end_to_end(two_needs, tmp_path):
    out = tmp_path / "run"
    with ScriptedChatServer(user_in_order) as user, ContractServer(system_by_keyword) as system:
        proc = run_cli("simulate", "run", "--task", str(two_needs), "--user-model", "sim", "--user-base-url",
                       user.base_url, "--system-url", system.url, "--output-dir", str(out), "--yes", "--quiet",
                       "--no-llm-cache")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    with ScriptedChatServer(judge_reply) as judge:
        args = ["simulate", "score", str(out), "--judge-model", "umb", "--judge-base-url", judge.base_url]
        proc = run_cli(*args, "--yes", "--quiet", "--no-llm-cache")
        assert proc.returncode == 0, proc.stderr
        assert len(judge.requests) == 2
        human = tmp_path / "human.tsv"
        human.write_text("lake_1 | lake-age\t2\nbridge_1 | bridge-toll\t0\n")
        again = run_cli(*args, "--yes", "--quiet", "--no-llm-cache", "--human-labels", str(human))
        assert again.returncode == 0 and len(judge.requests) == 2  # the labels come from umbrela.jsonl
    score = json.loads((out / "score.json").read_text())
    # lake: turn 1 ranks [lake-depth 2, lake-age 1 (UMBRELA)], ideal [2, 1, 1]; turn 2 [lake-fish 1, lake-depth 2]
    lake = [(2 + 1 / LOG2_3) / (2 + 1 / LOG2_3 + 1 / 2), (1 + 2 / LOG2_3) / (2 + 1 / LOG2_3)]
    # bridge: turn 1 [bridge-design 2, bridge-toll 0 (UMBRELA)], ideal [2, 2]; turn 2 ranks both relevant first
    bridge = [2 / (2 + 2 / LOG2_3), 1.0]
    sdcg = {"lake": lake[0] + lake[1] / (1 + math.log(2, 4)), "bridge": bridge[0] + bridge[1] / (1 + math.log(2, 4))}
    by_id = {s["session_id"]: s for s in score["sessions"]}
    assert by_id["lake"]["turn_gains"] == [pytest_approx(g) for g in lake]
    assert by_id["bridge"]["turn_gains"] == [pytest_approx(g) for g in bridge]
    assert by_id["lake"]["sdcg"] == pytest_approx(sdcg["lake"]) and by_id["bridge"]["sdcg"] == pytest_approx(
        sdcg["bridge"]
    )
    assert score["summary"]["mean_sdcg"] == pytest_approx((sdcg["lake"] + sdcg["bridge"]) / 2)
    assert score["summary"]["turns_to_satisfaction"] == 2.0 and score["summary"]["abandonment_rate"] == 0.0
    assert score["labels"] == {"judge": "umb", "unjudged_pairs": 2, "labelled": 2, "failed": 0, "outside_corpus": 0}
    # PPI of the mean label: judge [1, 0], people [2, 0] on both pairs; sample variances 0.5 and 0.5
    ppi = score["ppi_mean_label"]
    half = NormalDist().inv_cdf(0.975) * math.sqrt(0.5 / 2 + 0.5 / 2)
    assert (ppi["llm_mean"], ppi["ppi_mean"]) == (0.5, 1.0)
    assert (ppi["ppi_low"], ppi["ppi_high"]) == (pytest_approx(1.0 - half), pytest_approx(1.0 + half))


def pytest_approx(value):
    import pytest

    return pytest.approx(value, rel=1e-12)


def test_measures_equal_hand_computations_on_a_fixture_transcript():
    record = {
        "session_id": "s",
        "status": "abandoned",
        "qrels": {"a": 3, "b": 1},
        "turns": [
            {"turn": 1, "ok": True, "passages": [{"id": "x"}, {"id": "a"}, {"id": "b"}]},
            {"turn": 2, "ok": False, "passages": []},
            {"turn": 3, "ok": True, "passages": [{"id": "b"}, {"id": "nowhere"}]},
        ],
    }
    score = session_score(record, {("s_1", "x"): 2, ("t_1", "b"): 3}, k=10, base=4.0)
    first = (2 + 3 / LOG2_3 + 1 / 2) / (3 + 2 / LOG2_3 + 1 / 2)  # x's label counts at turn 1 only
    third = 1 / (3 + 1 / LOG2_3)
    assert score.turn_gains == (pytest_approx(first), 0.0, pytest_approx(third))
    assert score.sdcg == pytest_approx(first + 0 / (1 + 0.5) + third / (1 + math.log(3) / math.log(4)))
    assert (score.turns, score.failed_turns) == (3, 1)
    cut = session_score(record, {("s_1", "x"): 2}, k=1, base=2.0)
    assert cut.turn_gains == (pytest_approx(2 / 3), 0.0, pytest_approx(1 / 3))  # top 1: x (2) or b (1) vs a (3)
    summary = summarize([
        score,
        SessionScore("t", "satisfied", 2, 0, (1.0, 0.5), 1.5),
        SessionScore("u", "satisfied", 4, 0, (0.0,) * 4, 0.0),
        SessionScore("v", "user_failed", 0, 0, (), 0.0),
    ])  # fmt: skip
    assert summary.turns_to_satisfaction == 3.0  # (2 + 4) / 2 satisfied sessions
    assert summary.abandonment_rate == 1 / 3  # 1 abandoned of 3 finished (the user's failure is not a finish)
    assert summary.mean_sdcg == pytest_approx((score.sdcg + 1.5) / 4)
    assert (summary.failed_turns, summary.turns, summary.user_failed) == (1, 9, 1)


def test_an_mtrbench_retriever_with_a_generator_as_the_system(two_needs, tmp_path):
    shown = []

    def respond(body):
        if body["messages"][0]["content"].startswith("You answer the user's current question"):
            shown.append(body["messages"][-1]["content"])
            return Reply("generated answer")
        return user_in_order(body)

    out = tmp_path / "run"
    with ScriptedChatServer(respond) as server:
        proc = run_cli("simulate", "run", "--task", str(two_needs), "--limit", "1", "--user-model", "sim",
                       "--user-base-url", server.base_url, "--model", "bm25", "--generator-model", "gen",
                       "--generator-base-url", server.base_url, "--passages", "1", "--output-dir", str(out),
                       "--yes", "--quiet", "--no-llm-cache")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    record = json.loads((out / "sessions.jsonl").read_text().splitlines()[0])
    assert [t["response"] for t in record["turns"]] == ["generated answer"] * 2
    assert record["turns"][0]["passages"][0]["id"] == "lake-depth"  # the only passage with "deep"
    assert len(shown) == 2 and "[1] Lake Varnholm Lake Varnholm is 212 metres deep" in shown[0]
    assert "[2]" not in shown[0]  # --passages 1
    assert "Conversation history:\nUser: How deep is Lake Varnholm?\nAgent: generated answer" in shown[1]
    system = json.loads((out / "simulate.json").read_text())["system"]
    assert (system["kind"], system["history"], system["generator"]) == ("mtrbench", "full", "gen")


NUGGETS = ["Lake Varnholm is 212 metres deep", "char live in the lake"]


def nugget_judge(body):
    """Creation: the same two nuggets for every turn; the first vital, the second okay; an answer supports a nugget
    when it holds the nugget's first number or its word 'char'."""
    from mtrbench.judge.nuggets.prompts import ASSIGN_SYSTEM, CREATE_SYSTEM, LABEL_SYSTEM

    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    if system == CREATE_SYSTEM:
        return Reply(json.dumps(NUGGETS))
    if system == LABEL_SYSTEM:
        return Reply('["vital", "okay"]')
    if system == ASSIGN_SYSTEM:
        answer = user.split("Answer: ", 1)[1].splitlines()[0]
        return Reply(json.dumps(["support" if "212" in answer else "not_support",
                                 "support" if "char" in answer.lower() else "not_support"]))  # fmt: skip
    return judge_reply(body)


def test_answers_scored_by_nuggets(two_needs, tmp_path):
    def system(body):
        answers = {"deep": "It is 212 metres deep.", "fish": "Char and trout."}
        found = next((a for word, a in answers.items() if word in body["utterance"]), "I do not know.")
        return 200, {**system_by_keyword(body)[1], "response": found}

    out = tmp_path / "run"
    with ScriptedChatServer(user_in_order) as user, ContractServer(system) as contract:
        proc = run_cli("simulate", "run", "--task", str(two_needs), "--user-model", "sim", "--user-base-url",
                       user.base_url, "--system-url", contract.url, "--output-dir", str(out), "--yes", "--quiet",
                       "--no-llm-cache")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    answers = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    assert [(a["qid"], a["answer"]) for a in answers] == [
        ("lake_1", "It is 212 metres deep."), ("lake_2", "Char and trout."),
        ("bridge_1", "I do not know."), ("bridge_2", "I do not know."),
    ]  # fmt: skip
    with ScriptedChatServer(nugget_judge) as judge:
        proc = run_cli("simulate", "score", str(out), "--judge-model", "j", "--judge-base-url", judge.base_url,
                       "--nuggets", "--yes", "--quiet", "--no-llm-cache")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    nuggets = json.loads((out / "score.json").read_text())["nuggets"]
    # strict_vital / vital: the vital nugget (212) is supported by lake_1 only: 1/4 answers; strict_all / all:
    # lake_1 and lake_2 support one nugget of two each: (0.5 + 0.5 + 0 + 0) / 4
    assert nuggets == {"n": 4, "strict_vital": 0.25, "vital": 0.25, "strict_all": 0.25, "all": 0.25}


def test_nuggets_created_from_the_gold_responses(two_needs, tmp_path):
    shown = []

    def judge(body):
        from mtrbench.judge.nuggets.prompts import CREATE_SYSTEM

        if body["messages"][0]["content"] == CREATE_SYSTEM:
            shown.append(body["messages"][-1]["content"])
        return nugget_judge(body)

    out = tmp_path / "run"
    with ScriptedChatServer(user_in_order) as user, ContractServer(system_by_keyword) as contract:
        assert run_cli("simulate", "run", "--task", str(two_needs), "--limit", "1", "--user-model", "sim",
                       "--user-base-url", user.base_url, "--system-url", contract.url, "--output-dir", str(out),
                       "--yes", "--quiet", "--no-llm-cache").returncode == 0  # fmt: skip
    with ScriptedChatServer(judge) as server:
        proc = run_cli("simulate", "score", str(out), "--judge-model", "j", "--judge-base-url", server.base_url,
                       "--nuggets", "--nuggets-from", "responses", "--yes", "--quiet", "--no-llm-cache")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(shown) == 2  # one creation per answered turn, from the need's gold responses, not its passages
    assert all("212 metres." in s and "Char and trout." in s and "Arctic char" not in s for s in shown)
    nuggets = json.loads((out / "score.json").read_text())["nuggets"]
    assert nuggets["n"] == 2 and (out / "nuggets-responses" / "nuggets.jsonl").is_file()


def test_turn_gains_without_labels_equal_pytrec_evals_ndcg(two_needs, tmp_path):
    import pytrec_eval

    out = tmp_path / "run"
    with ScriptedChatServer(user_in_order) as user, ContractServer(system_by_keyword) as contract:
        assert run_cli("simulate", "run", "--task", str(two_needs), "--user-model", "sim", "--user-base-url",
                       user.base_url, "--system-url", contract.url, "--output-dir", str(out), "--yes", "--quiet",
                       "--no-llm-cache").returncode == 0  # fmt: skip
    assert run_cli("simulate", "score", str(out), "--k", "1", "--quiet").returncode == 0
    records = [json.loads(line) for line in (out / "sessions.jsonl").read_text().splitlines()]
    qrels, run = {}, {}
    for r in records:
        for t in r["turns"]:
            qid = f"{r['session_id']}_{t['turn']}"
            qrels[qid] = dict(r["qrels"])
            run[qid] = {p["id"]: p["score"] for p in t["passages"]}
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.1"}).evaluate(run)
    gains = {f"{s['session_id']}_{n}": g for s in json.loads((out / "score.json").read_text())["sessions"]
             for n, g in enumerate(s["turn_gains"], 1)}  # fmt: skip
    assert gains == {qid: pytest_approx(m["ndcg_cut_1"]) for qid, m in expected.items()}
    assert gains["lake_1"] == 1.0 and gains["lake_2"] == pytest_approx(1 / 2)  # lake-fish (1) above lake-depth (2)
