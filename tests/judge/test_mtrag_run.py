"""`mtrbench judge mtrag` end to end on four of IBM's sample predictions, against a scripted judge on 127.0.0.1.

The scripted judge decides each reply from the prompt alone (which judge, which answer) and the expected values
follow from those decisions: RB_llm 8/10 everywhere; the unanswerable first turn's answer is an "I don't know"
with no statements (RL_F NaN, no step-2 request); every other answer gets two statements, one supported (RL_F
0.5). Resuming is checked by cutting the reply log as a kill would and counting what a rerun sends.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedChatServer
from rouge_score import rouge_scorer

from mtrbench.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "mtrag_eval"
PREDICTIONS = DATA / "responses-4.jsonl"
UNANSWERABLE = "dd6b6ffd177f2b311abe676261279d2f::1"
IDK_ANSWER = "I do not have specific information"
TASKS = 4


def judge(body: dict) -> Reply:
    content = body["messages"][-1]["content"]
    if "Rating: [[score]]" in content:
        return Reply("Faithful and mostly complete.\nRating: [[8]]")
    if "Reply with a single word" in content:
        response = content.rsplit("Response: ", 1)[1]
        return Reply("yes" if response.startswith(IDK_ANSWER) else "no")
    if "asks the user for clarification" in content:
        return Reply('{"decision": "no", "explanation": "it answers"}')
    if "Break the answer below" in content:
        answer = content.split("Answer:\n", 1)[1]
        return Reply(
            '{"statements": []}'
            if answer.startswith(IDK_ANSWER)
            else '{"statements": ["The team played abroad.", "The moon is made of cheese."]}'
        )
    if "For each statement, decide" in content:
        return Reply(
            json.dumps(
                {
                    "statements": [
                        {"statement": "The team played abroad.", "reason": "stated", "verdict": 1},
                        {"statement": "The moon is made of cheese.", "reason": "not stated", "verdict": 0},
                    ]
                }
            )
        )
    return Reply("unexpected prompt", status=400)


ALL_ITEMS = TASKS * 4 + (TASKS - 1)  # four step-one questions per task, verdicts for the three with statements


def _argv(output: Path, url: str, *extra: str) -> list[str]:
    return [
        "judge",
        "mtrag",
        str(PREDICTIONS),
        "--output-dir",
        str(output),
        "--llm-model",
        "judge-m",
        "--llm-base-url",
        url,
        "--yes",
        "--no-llm-cache",
        "--quiet",
        *extra,
    ]


@pytest.fixture(scope="module")
def tiny_bertscore(tmp_path_factory):
    pytest.importorskip("bert_score")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tiny_model import make_tiny_model

    folder = tmp_path_factory.mktemp("tiny")
    baseline = folder / "baseline.tsv"
    baseline.write_text("LAYER,P,R,F\n0,0.1,0.2,0.15\n1,0.3,0.25,0.28\n2,0.4,0.35,0.38\n")
    model = make_tiny_model(folder / "model")
    # the tiny model has 128 positions; bert-score truncates at the tokenizer's limit (MiniLM's 512)
    config = json.loads((model / "tokenizer_config.json").read_text())
    (model / "tokenizer_config.json").write_text(json.dumps({**config, "model_max_length": 128}))
    return ["--bertscore-model", str(model), "--bertscore-baseline", str(baseline)]


@pytest.fixture(scope="module")
def full_run(tmp_path_factory, tiny_bertscore):
    output = tmp_path_factory.mktemp("mtrag")
    with ScriptedChatServer(judge) as server:
        assert main(_argv(output, server.base_url, *tiny_bertscore)) == 0
        sent = server.request_count
        assert main(_argv(output, server.base_url, *tiny_bertscore)) == 0  # a rerun asks nothing
        resent = server.request_count - sent
    rows = [json.loads(line) for line in (output / "metrics.jsonl").read_text().splitlines()]
    summary = json.loads((output / "summary.json").read_text())
    return output, sent, resent, rows, summary


@pytest.mark.slow  # shares two full CLI runs with a BERTScore model (about 10 s of CPU)
def test_every_instance_gets_every_official_metric_in_the_official_layout(full_run):
    _, sent, resent, rows, _ = full_run
    assert sent == ALL_ITEMS and resent == 0
    originals = [json.loads(line) for line in PREDICTIONS.read_text().splitlines()]
    assert [r["task_id"] for r in rows] == [o["task_id"] for o in originals]
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    for row, original in zip(rows, originals):
        m = row["metrics"]
        assert row["predictions"] == original["predictions"] and row["targets"] == original["targets"]
        assert all(isinstance(v, list) for v in m.values())
        assert set(m) >= {
            "Recall",
            "RougeL_stemFalse",
            "BertscoreP",
            "BertscoreR",
            "Length",
            "RB_agg",
            "RB_llm",
            "RL_F",
            "idk_eval",
            "underspecified_eval",
            "RB_agg_idk",
            "RL_F_idk",
            "RB_llm_idk",
            "RB_agg_idk_underspecified",
            "RL_F_idk_underspecified",
            "RB_llm_idk_underspecified",
        }
        # one value per passage; a task without passages has no key, as officially
        assert len(m.get("BertKPrec", [])) == len(m.get("Extractiveness_RougeL", [])) == len(original["contexts"])
        answer, target = original["predictions"][0]["text"], original["targets"][0]["text"]
        assert m["RougeL_stemFalse"] == [pytest.approx(scorer.score(target, answer)["rougeL"].fmeasure)]
        assert m["Length"] == [len(answer)]
        assert m["RB_llm"] == [0.8] and m["underspecified_eval"] == [0.0]


@pytest.mark.slow  # shares two full CLI runs with a BERTScore model (about 10 s of CPU)
def test_judge_verdicts_and_conditioning_follow_the_scripted_intentions(full_run):
    _, _, _, rows, summary = full_run
    first, rest = rows[0]["metrics"], [r["metrics"] for r in rows[1:]]
    assert first["idk_eval"] == [1.0] and first["RL_F"] == [None]  # no statements: NaN, written as null
    assert first["RB_agg"] == [0]  # no passage: c = 0
    assert first["RB_agg_idk"] == first["RL_F_idk"] == first["RB_llm_idk"] == [1.0]  # a right "I don't know"
    for m in rest:
        assert m["idk_eval"] == [0.0] and m["RL_F"] == [0.5]
        assert m["RB_agg_idk_underspecified"] == m["RB_agg"] and m["RL_F_idk"] == [0.5]
    means = summary["means"]
    assert summary["per_class_instances"] == {"ANSWERABLE": 3, "UNANSWERABLE": 1}
    assert means["all"]["RL_F"] == pytest.approx(0.5) and summary["values_left_out"]["RL_F"] == 1
    assert means["UNANSWERABLE"]["RB_llm_idk"] == 1.0 and means["ANSWERABLE"]["RB_llm"] == pytest.approx(0.8)
    rb_agg = sum(r["metrics"]["RB_agg"][0] for r in rows) / TASKS
    assert summary["harmonic_means"]["HM(RB_agg, RL_F, RB_llm)"] == pytest.approx(3 / (1 / rb_agg + 2 + 1 / 0.8))


@pytest.mark.slow  # shares two full CLI runs with a BERTScore model (about 10 s of CPU)
def test_a_killed_run_resumes_asking_only_what_is_missing(full_run, tmp_path):
    output, _, _, rows, _ = full_run
    log = (output / "llm_judgments.jsonl").read_text().splitlines()
    assert len(log) == ALL_ITEMS
    kept = 7
    (tmp_path / "llm_judgments.jsonl").write_text("\n".join(log[:kept]) + "\n" + log[kept][:40])  # cut mid-line
    metrics = "RB_llm,RL_F,idk_eval,underspecified_eval,Recall,RougeL_stemFalse"
    with ScriptedChatServer(judge) as server:
        assert main(_argv(tmp_path, server.base_url, "--metrics", metrics)) == 0
        assert server.request_count == ALL_ITEMS - kept
    again = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    for before, after in zip(rows, again):
        for name in ("RB_llm", "RL_F", "idk_eval", "underspecified_eval", "RL_F_idk_underspecified"):
            assert after["metrics"][name] == before["metrics"][name]


def test_failed_items_fail_the_run_and_a_rerun_asks_only_them(tmp_path, capsys):
    def rb_llm_down(body: dict) -> Reply:
        if "Rating: [[score]]" in body["messages"][-1]["content"]:
            return Reply("overloaded", status=503)
        return judge(body)

    argv = _argv(tmp_path, "", "--metrics", "RB_llm,idk_eval", "--max-retries", "0", "--max-failure-rate", "0.1")
    with ScriptedChatServer(rb_llm_down) as server:
        argv[argv.index("--llm-base-url") + 1] = server.base_url
        assert main(argv) == 1
    assert re.search(r"error: .*failed on 4 of 8 items", capsys.readouterr().err)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert all("RB_llm" not in r["metrics"] and r["metrics"]["idk_eval"] for r in rows)
    with ScriptedChatServer(judge) as server:
        argv[argv.index("--llm-base-url") + 1] = server.base_url
        assert main(argv) == 0
        assert server.request_count == TASKS
        assert all("Rating: [[score]]" in b["messages"][-1]["content"] for b in server.requests)


def test_dry_run_shows_prompts_and_sends_nothing(tmp_path, capsys):
    with ScriptedChatServer(judge) as server:
        assert main(_argv(tmp_path, server.base_url, "--metrics", "RB_llm,RL_F", "--dry-run")) == 0
        assert server.request_count == 0
    out = capsys.readouterr().out
    assert "Rating: [[score]]" in out and "dry run" in out
    assert not (tmp_path / "metrics.jsonl").exists()


def test_llm_metrics_without_a_judge_and_bad_predictions_are_one_error_line(tmp_path, capsys):
    assert main(["judge", "mtrag", str(PREDICTIONS), "--metrics", "RL_F", "--output-dir", str(tmp_path)]) == 2
    assert main(["judge", "mtrag", str(PREDICTIONS), "--metrics", "Rouge", "--output-dir", str(tmp_path)]) == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "a::1", "input": [], "targets": [{"speaker": "agent", "text": "x"}]}\n')
    assert main(["judge", "mtrag", str(bad), "--metrics", "Recall", "--output-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith("error: ") for line in err)
    assert "need an LLM judge" in err[0] and "unknown MTRAG metric(s) Rouge" in err[1] and "no 'predictions'" in err[2]


def test_format_check_prints_one_error_line_per_problem(tmp_path, capsys):
    bad = tmp_path / "p.jsonl"
    bad.write_text(
        '{"task_id": "a::1", "input": [], "contexts": [{"document_id": "d"}], "predictions": []}\n'
        '{"task_id": 2, "input": [], "contexts": [], "predictions": [{"text": 1}]}\n'
    )
    assert main(["judge", "mtrag", str(bad), "--check-format", "generation_taskb"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(err) == 3  # score missing on line 1; task_id type and prediction text type on line 2
    assert (
        main(
            ["judge", "mtrag", str(PREDICTIONS), "--check-format", "generation_taskb", "--input-file", str(PREDICTIONS)]
        )
        == 0
    )


def test_rb_llm_is_the_median_over_judges_and_the_other_judges_ask_the_first(tmp_path):
    ratings = {"judge-a": 8, "judge-b": 3, "judge-c": 6}

    def by_model(body: dict) -> Reply:
        if "Rating: [[score]]" in body["messages"][-1]["content"]:
            return Reply(f"Rating: [[{ratings[body['model']]}]]")
        return judge(body)

    with ScriptedChatServer(by_model) as server:
        judges = tmp_path / "judges.json"
        judges.write_text(
            json.dumps({"judges": [{"name": m, "model": m, "base_url": server.base_url} for m in ratings]})
        )
        assert (
            main(
                [
                    "judge",
                    "mtrag",
                    str(PREDICTIONS),
                    "--output-dir",
                    str(tmp_path),
                    "--judges",
                    str(judges),
                    "--metrics",
                    "RB_llm,idk_eval",
                    "--yes",
                    "--no-llm-cache",
                    "--quiet",
                ]
            )
            == 0
        )
        asked = [(b["model"], "Rating: [[score]]" in b["messages"][-1]["content"]) for b in server.requests]
    assert sorted(asked) == sorted([(m, True) for m in ratings] * TASKS + [("judge-a", False)] * TASKS)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert all(r["metrics"]["RB_llm"] == [0.6] for r in rows)


# Scripted replies per answer (step 1 statements, step 2 verdicts) and the faithfulness ragas 0.3.3 (the version
# the official requirements pin) gave for them: its Faithfulness.single_turn_ascore was run once against these same
# replies from a 127.0.0.1 server (ragas is not a dependency here: it would replace openai 3.x with 1.x). ragas sent
# 7 requests: no step 2 for the answer without statements; C's score divides by the 3 verdicts returned, not by 4.
RAGAS_CASES = {
    "ANSWER-A": ('{"statements": ["s1", "s2", "s3"]}', ["s1", "s2", "s3"], [1, 0, 1], 2 / 3),
    "ANSWER-B": ('{"statements": []}', [], None, None),  # ragas: nan
    "ANSWER-C": ('{"statements": ["s1", "s2", "s3", "s4"]}', ["s1", "s2", "s3", "s4"], [1, 1, 0], 2 / 3),
    "ANSWER-D": ('```json\n{"statements": ["only one"]}\n```', ["only one"], [0], 0.0),
}


def test_rl_f_equals_ragas_on_the_same_scripted_replies(tmp_path):
    def respond(body: dict) -> Reply:
        content = body["messages"][-1]["content"]
        if "Break the answer below" in content:
            return Reply(RAGAS_CASES[content.split("Answer:\n", 1)[1].strip()][0])
        statements = json.loads(content.split("Statements:\n", 1)[1])
        verdicts = next(c[2] for c in RAGAS_CASES.values() if c[1] == statements)
        return Reply(
            json.dumps(
                {"statements": [{"statement": s, "reason": "r", "verdict": v} for s, v in zip(statements, verdicts)]}
            )
        )

    predictions = tmp_path / "p.jsonl"
    predictions.write_text(
        "".join(
            json.dumps(
                {
                    "task_id": f"c::{i}",
                    "input": [{"speaker": "user", "text": "q"}],
                    "answerability": ["ANSWERABLE"],
                    "contexts": [
                        {"document_id": "d1", "text": "ctx one", "score": 1.0},
                        {"document_id": "d2", "text": "ctx two", "score": 0.5},
                    ],
                    "predictions": [{"text": answer}],
                }
            )
            + "\n"
            for i, answer in enumerate(RAGAS_CASES)
        )
    )
    with ScriptedChatServer(respond) as server:
        assert (
            main(
                [
                    "judge",
                    "mtrag",
                    str(predictions),
                    "--output-dir",
                    str(tmp_path / "out"),
                    "--metrics",
                    "RL_F",
                    "--llm-model",
                    "m",
                    "--llm-base-url",
                    server.base_url,
                    "--yes",
                    "--no-llm-cache",
                    "--quiet",
                ]
            )
            == 0
        )
        assert server.request_count == 7
    rows = [json.loads(line) for line in (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()]
    for row, (_, _, _, expected) in zip(rows, RAGAS_CASES.values()):
        assert row["metrics"]["RL_F"] == [expected if expected is None else pytest.approx(expected)]
