"""LLM judging end to end against a scripted chat-completions server on 127.0.0.1.

The scripted judge reads each prompt as a model would (which turn, which answer), decides its reply from that
alone and remembers what it meant; expected numbers come from those intentions, never from mtrbench's output.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from pathlib import Path
from statistics import fmean

import pytest
from llm_server import Reply, ScriptedChatServer
from scipy.stats import pointbiserialr

from mtrbench.analyses.report import ragalign_report
from mtrbench.cli import main
from mtrbench.data import load_task
from mtrbench.formats.run import read_run
from mtrbench.formats.verdicts import read_generation_judgments
from mtrbench.judge.api import ragalign_from_verdicts
from mtrbench.judge.table import rad_bench_tables
from mtrbench.measures import evaluate, parse

SECRET = "sk-test-JUDGE-0123456789abcdef"
KEY_ENV = "MTRBENCH_JUDGE_TEST_KEY"
GENERATIONS = Path(__file__).resolve().parents[1] / "data" / "generations-sample.jsonl"


def _current(content: str) -> tuple[str, str]:
    question = re.search(r"\[Current question\]\n(.*?)\n\[End of current question\]", content, re.S).group(1)
    answer = re.search(r"\[Assistant's answer\]\n(.*?)\n\[End of assistant's answer\]", content, re.S).group(1)
    return question, answer


class ScriptedJudge:
    """Replies to rating and verdict prompts; ``script`` maps an answer text to the replies for it, in order
    (the last repeats). Records what each well-formed reply meant."""

    def __init__(self, script: dict[str, list[str]]) -> None:
        self.script = {k: list(v) for k, v in script.items()}
        self.asked: dict[str, int] = {}
        self.contents: dict[tuple[str, str], str] = {}  # (question, answer) -> prompt
        self.lock = threading.Lock()
        self.reply_for = None  # content -> reply text, instead of the script

    def __call__(self, body: dict) -> Reply:
        content = body["messages"][-1]["content"]
        question, answer = _current(content)
        with self.lock:
            self.asked[answer] = self.asked.get(answer, 0) + 1
            self.contents[(question, answer)] = content
            if self.reply_for is not None:
                return Reply(self.reply_for(content))
            replies = self.script[answer]
            return Reply(replies.pop(0) if len(replies) > 1 else replies[0])


def write_judges(path: Path, base_url: str, model: str = "judge-m") -> Path:
    path.write_text(
        json.dumps(
            {
                "judges": [
                    {
                        "name": "j",
                        "model": model,
                        "base_url": base_url,
                        "api_key_env": KEY_ENV,
                        "parse_retries": 1,
                        "max_retries": 0,
                        "concurrency": 2,
                        "timeout_s": 20,
                    }
                ]
            }
        )
    )
    return path


def answers() -> dict[str, str]:
    return {json.loads(l)["qid"]: json.loads(l)["answer"] for l in GENERATIONS.read_text().splitlines()}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_rating_with_malformed_replies(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, SECRET)
    a = answers()
    script = {
        a["geo-01_1"]: ["The answer covers the formation well.\nRating: [[8]]"],
        a["geo-01_2"]: ["I would rate this highly.", "Mostly right; the trench is unnamed. Rating: [[6]]"],  # retried
        a["geo-01_3"]: ["Rating: [[11]]", "Rating: 12 out of 10"],  # out of scale twice: failure, never scored
        a["geo-01_4"]: [f"Fine. Rating: [[3]] (key {SECRET})"],  # a server echoing the key: must not be stored
    }
    judge = ScriptedJudge(script)
    out = tmp_path / "out"
    with ScriptedChatServer(judge, with_headers=False) as server:
        judges = write_judges(tmp_path / "judges.json", server.base_url)
        code = main(
            [
                "judge",
                "run",
                str(GENERATIONS),
                "--task",
                "mtrbench-sample",
                "--judge",
                "rating",
                "--measures",
                "TokenF1",
                "--judges",
                str(judges),
                "--llm-cache",
                str(tmp_path / "c.sqlite"),
                "--output-dir",
                str(out),
                "--yes",
                "--quiet",
            ]
        )
        assert code == 0
        assert server.request_count == 1 + 2 + 2 + 1
        headers = server.headers
    printed = capsys.readouterr()
    assert any(SECRET in v for h in headers for k, v in h.items() if k.lower() == "authorization")
    ratings = {r["qid"]: r["rating"] for r in read_jsonl(out / "ratings.jsonl")}
    assert ratings == {"geo-01_1": 8, "geo-01_2": 6, "geo-01_4": 3}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"] == {"turns": 4, "answered": 3, "failures": 1, "asked_this_run": 4}
    assert [f["qid"] for f in summary["failures"]] == ["geo-01_3"] and "rating 12" in summary["failures"][0]["error"]
    assert summary["mean_rating"] == pytest.approx(fmean([8, 6, 3]))
    # Table 2 style: mean over turn positions (1, 2, 4 here: one generation each) of the per-turn means
    mean = fmean([8, 6, 3])
    assert summary["table"]["scripted"] == pytest.approx({"mtrbench-sample": mean, "average": mean})
    scores = json.loads((out / "scores.json").read_text())
    assert scores["per_turn"]["geo-01_3"]["rating"] is None and "rating_error" in scores["per_turn"]["geo-01_3"]
    assert "1 turn(s) failed" in printed.out
    # RR prompt: the passages shown, the reference answer, earlier turns with their reference answers
    content = judge.contents[("how deep does it get?", a["geo-01_2"])]
    assert "Reference answer (turn 1): It formed about 14,000 years ago" in content
    assert "[Context]\n[1] " in content and "Its maximum depth is 212 metres, in the Djupet trench" in content
    for path in [*out.iterdir(), tmp_path / "c.sqlite"]:
        assert SECRET.encode() not in path.read_bytes(), path.name
    assert SECRET not in printed.out + printed.err

    # a re-run asks only the failure again (the log answered the rest), even without the cache
    judge.script[a["geo-01_3"]] = ["Rating: [[5]]"]
    with ScriptedChatServer(judge) as server:
        write_judges(tmp_path / "judges.json", server.base_url)
        assert (
            main(
                [
                    "judge",
                    "run",
                    str(GENERATIONS),
                    "--task",
                    "mtrbench-sample",
                    "--judge",
                    "rating",
                    "--measures",
                    "",
                    "--judges",
                    str(judges),
                    "--no-llm-cache",
                    "--output-dir",
                    str(out),
                    "--yes",
                    "--quiet",
                ]
            )
            == 0
        )
        assert server.request_count == 1
    assert {r["qid"]: r["rating"] for r in read_jsonl(out / "ratings.jsonl")} == {**ratings, "geo-01_3": 5}


def test_dry_run_sends_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, SECRET)
    with ScriptedChatServer(["Rating: [[5]]"]) as server:
        judges = write_judges(tmp_path / "judges.json", server.base_url)
        assert (
            main(
                [
                    "judge",
                    "run",
                    str(GENERATIONS),
                    "--task",
                    "mtrbench-sample",
                    "--judge",
                    "verdict",
                    "--judges",
                    str(judges),
                    "--output-dir",
                    str(tmp_path / "o"),
                    "--dry-run",
                ]
            )
            == 0
        )
        assert server.request_count == 0
    assert "dry run: 4 requests" in capsys.readouterr().out


def test_verdicts_feed_ragalign_like_the_file_path(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    a = answers()
    intended = {"geo-01_1": 1, "geo-01_2": 0, "geo-01_4": 1}
    script = {
        a[q]: [f"Checked against the reference.\nVerdict: [[{'CORRECT' if v else 'INCORRECT'}]]"]
        for q, v in intended.items()
    }
    script[a["geo-01_2"]].insert(0, "Hard to say; partly right.")  # unreadable once, then answered
    script[a["geo-01_3"]] = ["Verdict: [[CORRECT]] or maybe\nVerdict: [[INCORRECT]] [[CORRECT]]"]  # conflicting
    judge = ScriptedJudge(script)
    out = tmp_path / "out"
    # a retrieval run of its own: gold first for turn 1, second for turn 2, absent for turn 4
    run_file = tmp_path / "run.trec"
    run_file.write_text(
        "geo-01_1 Q0 geo-varnholm-formation 1 9 r\ngeo-01_1 Q0 geo-halvard-history 2 8 r\n"
        "geo-01_2 Q0 geo-halvard-history 1 9 r\ngeo-01_2 Q0 geo-varnholm-dimensions 2 8 r\n"
        "geo-01_4 Q0 geo-varnholm-formation 1 9 r\ngeo-01_4 Q0 geo-halvard-design 2 8 r\n"
    )
    with ScriptedChatServer(judge) as server:
        judges = write_judges(tmp_path / "judges.json", server.base_url)
        assert (
            main(
                [
                    "judge",
                    "run",
                    str(GENERATIONS),
                    "--task",
                    "mtrbench-sample",
                    "--judge",
                    "verdict",
                    "--measures",
                    "",
                    "--ragalign",
                    "RAGAlign@1,RAGAlign@2(of=nDCG)",
                    "--run",
                    str(run_file),
                    "--judges",
                    str(judges),
                    "--no-llm-cache",
                    "--output-dir",
                    str(out),
                    "--yes",
                    "--quiet",
                ]
            )
            == 0
        )
    # the file-based path reads what judge wrote
    from_file = read_generation_judgments(out / "verdicts.jsonl")
    assert from_file == intended  # the conflicting turn is a failure, absent
    task = load_task("mtrbench-sample")
    evaluation = evaluate(task.qrels(), read_run(run_file), [parse("Hit@1"), parse("nDCG@2")])
    expected = ragalign_report({"x": evaluation}, from_file, "hit_rate_at_1", "ndcg_at_2")["x"]
    got = json.loads((out / "scores.json").read_text())["ragalign"]
    assert got["ragalign_at_1"]["value"] == pytest.approx(expected["binary"]["value"])
    assert got["ragalign_ndcg_at_2"]["value"] == pytest.approx(expected["point_biserial"]["value"])
    assert got["ragalign_ndcg_at_2"]["p_value"] == pytest.approx(expected["point_biserial"]["p_value"])
    # by hand: Hit@1 = 1, 0, 0 against verdicts 1, 0, 1: 2 of 3 agree; nDCG@2 = 1, 1/log2(3), 0
    assert got["ragalign_at_1"]["value"] == pytest.approx(2 / 3) and got["ragalign_at_1"]["n"] == 3
    r = pointbiserialr([1, 0, 1], [1.0, 1 / math.log2(3), 0.0])
    assert got["ragalign_ndcg_at_2"]["value"] == pytest.approx(r.statistic)
    # the one failed turn (geo-01_3) is the only generated turn without a verdict
    assert got["ragalign_at_1"]["missing_generation"] == 1


def test_undefined_correlation_is_not_nan():
    """Every turn's retrieval at nDCG@1 is 1: the point-biserial r is undefined, reported as None with a note."""
    task = load_task("mtrbench-sample")
    qids = ["geo-01_1", "geo-01_2", "geo-01_3"]
    run = {q: {next(iter(task.qrels()[q])): 1.0} for q in qids}
    got = ragalign_from_verdicts(
        {"geo-01_1": 1, "geo-01_2": 0, "geo-01_3": 1},
        task,
        run,
        [parse("RAGAlign@1(of=nDCG)"), parse("RAGAlign@1")],
        qids=qids,
    )
    assert got["ragalign_ndcg_at_1"]["value"] is None and "constant" in got["ragalign_ndcg_at_1"]["note"]
    assert got["ragalign_at_1"]["value"] == pytest.approx(2 / 3) and got["ragalign_at_1"]["missing_generation"] == 0
    # the other constant: every verdict CORRECT (a good generator) is an undefined r too, not a refusal to score
    run = {
        "geo-01_1": {next(iter(task.qrels()["geo-01_1"])): 1.0},
        "geo-01_2": {"no-such-doc": 1.0},
        "geo-01_3": {next(iter(task.qrels()["geo-01_3"])): 1.0},
    }
    got = ragalign_from_verdicts(
        {q: 1 for q in qids}, task, run, [parse("RAGAlign@1(of=nDCG)"), parse("RAGAlign@1")], qids=qids
    )
    assert got["ragalign_ndcg_at_1"]["value"] is None and "constant" in got["ragalign_ndcg_at_1"]["note"]
    assert got["ragalign_ndcg_at_1"]["n"] == 3 and got["ragalign_ndcg_at_1"]["p_value"] is None
    assert got["ragalign_at_1"]["value"] == pytest.approx(2 / 3)  # Hit@1 = 1, 0, 1 against 1, 1, 1


def test_rad_bench_answers_rated_and_aggregated(shared, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    data = shared / "datasets/fixtures/rad_bench/data"
    answers_by_key = {}
    for file in sorted((data / "model_answer").glob("*.jsonl")):
        for row in read_jsonl(file):
            for t, text in enumerate(row["choices"][0]["turns"], 1):
                answers_by_key[(row["model_id"], row["question_id"], t)] = text
    questions = {r["question_id"]: r["turns"] for r in read_jsonl(data / "questions.jsonl")}

    def rating(question: str, answer: str) -> int:  # what the scripted judge means for this question and answer
        return 1 + int(hashlib.sha256(f"{question}|{answer}".encode()).hexdigest(), 16) % 10

    intended = {key: rating(questions[key[1]][key[2] - 1], text) for key, text in answers_by_key.items()}
    judge = ScriptedJudge({})
    judge.reply_for = lambda content: f"Reasonable.\nRating: [[{rating(*_current(content))}]]"
    out = tmp_path / "out"
    with ScriptedChatServer(judge) as server:
        judges = write_judges(tmp_path / "judges.json", server.base_url)
        assert (
            main(
                [
                    "judge",
                    "rad-bench",
                    "--answers",
                    str(data),
                    "--judges",
                    str(judges),
                    "--no-llm-cache",
                    "--output-dir",
                    str(out),
                    "--yes",
                    "--quiet",
                ]
            )
            == 0
        )
        assert server.request_count == len(answers_by_key)
    records = read_jsonl(out / "rad_judgments.jsonl")
    assert {(r["model"], r["question_id"], r["turn"]): r["score"] for r in records} == intended
    assert {tuple(r["judge"]) for r in records} >= {("judge-m", "TR-1-turn"), ("judge-m", "RS-3-turn")}
    # the RAD-Bench-layout file aggregates like any released judgment file; hand means per model and category
    table = rad_bench_tables(out / "rad_judgments.jsonl")[0].table
    for model in {k[0] for k in intended}:
        per_category = {}
        for category in ("academic", "customer", "travel"):
            turns = sorted({k[2] for k in intended if k[0] == model and f"_{category}_" in k[1]})
            per_category[category] = fmean(
                fmean(v for k, v in intended.items() if k[0] == model and f"_{category}_" in k[1] and k[2] == t)
                for t in turns
            )
        assert table[model] == pytest.approx({**per_category, "average": fmean(per_category.values())})
    # scenario prompts: travel turn 1 shows no reference, RS turn 2 shows the reference for turn 1
    travel_1 = judge.contents[(questions["TR_travel_00"][0], answers_by_key[("model-a", "TR_travel_00", 1)])]
    assert "[Reference" not in travel_1 and "travel plan" in travel_1
    rs_2 = judge.contents[(questions["RS_academic_00"][1], answers_by_key[("model-a", "RS_academic_00", 2)])]
    refs = {
        r["question_id"]: r["choices"][0]["turns"]
        for r in read_jsonl(data / "reference_answer/reference_ans_model.jsonl")
    }
    assert f"Reference answer (turn 1): {refs['RS_academic_00'][0]}" in rs_2
    assert f"[Reference knowledge points]\n{refs['RS_academic_00'][1]}" in rs_2


def test_missing_key_for_a_remote_judge_is_one_error(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MTRBENCH_JUDGE_ABSENT_KEY", raising=False)
    code = main(
        [
            "judge",
            "run",
            str(GENERATIONS),
            "--task",
            "mtrbench-sample",
            "--judge",
            "rating",
            "--llm-model",
            "gpt-4o",
            "--llm-base-url",
            "https://api.example.invalid/v1",
            "--api-key-env",
            "MTRBENCH_JUDGE_ABSENT_KEY",
            "--output-dir",
            str(tmp_path / "o"),
            "--yes",
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: environment variable MTRBENCH_JUDGE_ABSENT_KEY is not set")


def test_judge_run_exits_1_past_max_failure_rate_and_still_writes_scores(tmp_path, monkeypatch, capsys):
    """3 of 4 ratings unusable: exit 1 with one line naming 3 of 4 and the most common reason; scores.json
    written; the mean covers only the parsed rating. --max-failure-rate 0.75 accepts the same replies (exit 0)."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    a = answers()
    script = {
        a["geo-01_1"]: ["Rating: [[7]]"],
        **{a[q]: ["No rating here, sorry."] for q in ("geo-01_2", "geo-01_3", "geo-01_4")},
    }
    for limit, expected_code in ((None, 1), ("0.75", 0)):
        out = tmp_path / f"out-{limit}"
        with ScriptedChatServer(ScriptedJudge(script)) as server:
            judges = write_judges(tmp_path / "judges.json", server.base_url)
            code = main(
                [
                    "judge",
                    "run",
                    str(GENERATIONS),
                    "--task",
                    "mtrbench-sample",
                    "--judge",
                    "rating",
                    "--measures",
                    "",
                    "--judges",
                    str(judges),
                    "--no-llm-cache",
                    "--output-dir",
                    str(out),
                    "--yes",
                    "--quiet",
                    *(["--max-failure-rate", limit] if limit else []),
                ]
            )
        printed = capsys.readouterr()
        assert code == expected_code
        errors = [line for line in printed.err.splitlines() if line.startswith("error:")]
        if expected_code:
            assert len(errors) == 1 and "failed on 3 of 4 items (75% > --max-failure-rate 0.25" in errors[0]
            assert "most common:" in errors[0] and "(3)" in errors[0]
        else:
            assert not errors
        summary = json.loads((out / "summary.json").read_text())
        assert summary["counts"]["answered"] == 1 and summary["mean_rating"] == 7
        assert (out / "scores.json").is_file()


def test_verdicts_all_failing_with_ragalign_name_the_judge_failure(tmp_path, monkeypatch, capsys):
    """Every verdict unreadable: the error names the judge's failures (not 'RAGAlign: no evaluated query has a
    generation judgment'), exit 1, scores.json still written."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    judge = ScriptedJudge({})
    judge.reply_for = lambda content: "I cannot decide."
    out = tmp_path / "out"
    with ScriptedChatServer(judge) as server:
        judges = write_judges(tmp_path / "judges.json", server.base_url)
        code = main(
            [
                "judge",
                "run",
                str(GENERATIONS),
                "--task",
                "mtrbench-sample",
                "--judge",
                "verdict",
                "--measures",
                "",
                "--ragalign",
                "RAGAlign@1",
                "--judges",
                str(judges),
                "--no-llm-cache",
                "--output-dir",
                str(out),
                "--yes",
                "--quiet",
            ]
        )
    err = capsys.readouterr().err
    assert code == 1
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "failed on 4 of 4 items" in errors[0] and "RAGAlign" not in errors[0]
    assert (out / "scores.json").is_file()


def test_timeout_and_max_retries_flags_override_the_judges_file(tmp_path, monkeypatch, capsys):
    """The judges file says 20 s and no retries; --timeout 0.3 --max-retries 1 against a server that answers after
    1.5 s: every item is tried exactly twice (counted at the server), then counted as failed (exit 1)."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    slow = lambda body: Reply("Rating: [[5]]", delay_s=1.5)  # noqa: E731
    with ScriptedChatServer(slow) as server:
        judges = write_judges(tmp_path / "judges.json", server.base_url)
        code = main(
            [
                "judge",
                "run",
                str(GENERATIONS),
                "--task",
                "mtrbench-sample",
                "--judge",
                "rating",
                "--measures",
                "",
                "--judges",
                str(judges),
                "--no-llm-cache",
                "--output-dir",
                str(tmp_path / "o"),
                "--yes",
                "--quiet",
                "--timeout",
                "0.3",
                "--max-retries",
                "1",
                "--concurrency",
                "4",
            ]
        )
        assert server.request_count == 2 * 4
    assert code == 1 and "failed on 4 of 4 items" in capsys.readouterr().err
    assert (
        main(
            [
                "judge",
                "run",
                str(GENERATIONS),
                "--task",
                "mtrbench-sample",
                "--judge",
                "rating",
                "--judges",
                str(judges),
                "--timeout",
                "0",
                "--dry-run",
            ]
        )
        == 2
    )
    assert "--timeout is seconds per request and must be positive" in capsys.readouterr().err
