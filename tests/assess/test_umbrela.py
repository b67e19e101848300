"""`mtrbench assess --method umbrela` against a scripted chat-completions server on 127.0.0.1 (and once against the
real small model): exact labels into a qrels file every command reads, the sidecar marking the LLM-made lines,
unparsable replies counted with the exit code, resume asking only what is missing, dry run and bad input.

The server reads each prompt's "Query:" and "Passage:" lines to tell the pair and answers from GRADES; every
expected line and count is derived by hand from GRADES and the two runs below."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedChatServer

from mtrbench.assess.umbrela_prompt import GRADE_MEANINGS, parse_grade_reply
from mtrbench.cli import main
from mtrbench.formats.qrels import read_qrels

QUERY_OF = {
    "How deep is Lake Varnholm?": "c1_1",
    "Which fish live in Lake Varnholm?": "c1_2",
    "Who designed the Orrin Suspension Bridge?": "c1_3",
    "When did the Orrin Suspension Bridge open?": "c1_4",
}
DOC_OF = {
    "reaches a maximum depth of 212 metres": "varn-depth",
    "lives only in Lake Varnholm": "varn-fish",
    "was designed by Hedda Lorne": "orrin-design",
    "opened to traffic in 1931": "orrin-open",
}
RUN_A = {
    "c1_1": ["varn-depth", "varn-fish", "orrin-open"],
    "c1_2": ["varn-fish", "varn-depth"],
    "c1_3": ["orrin-design", "orrin-open"],
    "c1_4": ["orrin-open", "varn-depth"],
    "c1_5": ["varn-depth"],
}
RUN_B = {
    "c1_1": ["varn-fish", "orrin-design"],
    "c1_2": ["varn-fish", "orrin-open"],
    "c1_3": ["orrin-open", "varn-fish"],
    "c1_4": ["orrin-design", "orrin-open", "varn-fish"],
}
ORIGINAL_LINES = [
    "c1_1 0 varn-depth 2",
    "c1_2 0 varn-fish 2",
    "c1_3 0 orrin-design 2",
    "c1_4 0 orrin-open 2",
    "c1_4 0 orrin-design 1",
]
# Pooled top-2 of both runs: 13 pairs, 5 judged by native-mini, 8 to label, in pool order (task query order,
# then best rank, then doc id). Each with the grade the scripted judge gives and the way it writes it.
GRADES = {
    ("c1_1", "varn-fish"): (1, "##final score: 1"),
    ("c1_1", "orrin-design"): (0, "M: 0, T: 2\n##final score: 0"),
    ("c1_2", "orrin-open"): (0, "##final score: 0"),
    ("c1_2", "varn-depth"): (2, "**Final Score:** 2"),
    ("c1_3", "orrin-open"): (1, "1"),
    ("c1_3", "varn-fish"): (0, "##Final score: 0"),
    ("c1_4", "varn-depth"): (0, "final_score: 0"),
    ("c1_5", "varn-depth"): (3, "##final score: 3"),
}
PAIRS = list(GRADES)


def identify(body: dict) -> tuple[str, str]:
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    query = user.split("\nQuery: ", 1)[1].split("\nPassage: ", 1)[0].strip()
    passage = user.split("\nPassage: ", 1)[1].split("\n\nWork through", 1)[0]
    qid = "c1_5" if "Current question: thanks!" in query else QUERY_OF[query]
    return qid, next(d for snippet, d in DOC_OF.items() if snippet in passage)


class Responder:
    def __init__(self, bad: set | None = None, hold: tuple[str, str] | None = None) -> None:
        self.seen: list[tuple[str, str]] = []
        self.bad = bad or set()
        self.hold = hold
        self.held, self.release = threading.Event(), threading.Event()
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> Reply:
        pair = identify(body)
        with self.lock:
            self.seen.append(pair)
        if pair == self.hold:
            self.held.set()
            self.release.wait(60)
        if pair in self.bad:
            return Reply("The passage looks fairly relevant to me.")
        return Reply(GRADES[pair][1])


def write_runs(folder: Path) -> list[str]:
    paths = []
    for name, run in (("run_a.trec", RUN_A), ("run_b.trec", RUN_B)):
        lines = [f"{q} Q0 {d} {r} {10 - r} {name}" for q, docs in run.items() for r, d in enumerate(docs, 1)]
        (folder / name).write_text("\n".join(lines) + "\n")
        paths.append(str(folder / name))
    return paths


def umbrela_args(native_mini, tmp_path, base_url, *extra):
    return [
        "assess",
        str(native_mini),
        "--method",
        "umbrela",
        "--runs",
        *write_runs(tmp_path),
        "--depth",
        "2",
        "--llm-model",
        "judge-m",
        "--llm-base-url",
        base_url,
        "--output-dir",
        str(tmp_path / "out"),
        "--no-llm-cache",
        "--yes",
        "--quiet",
        *extra,
    ]


def lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip()]


# task query order; per query the original judgments first, then the filled ones in pool order
EXPECTED_QRELS = [
    "c1_1 0 varn-depth 2",
    "c1_1 0 varn-fish 1",
    "c1_1 0 orrin-design 0",
    "c1_2 0 varn-fish 2",
    "c1_2 0 orrin-open 0",
    "c1_2 0 varn-depth 2",
    "c1_3 0 orrin-design 2",
    "c1_3 0 orrin-open 1",
    "c1_3 0 varn-fish 0",
    "c1_4 0 orrin-open 2",
    "c1_4 0 orrin-design 1",
    "c1_4 0 varn-depth 0",
    "c1_5 0 varn-depth 3",
]


def test_exact_labels_qrels_and_sidecar(native_mini, tmp_path, capsys):
    responder = Responder()
    with ScriptedChatServer(responder) as server:
        assert main(umbrela_args(native_mini, tmp_path, server.base_url)) == 0
        assert server.request_count == 8
        prompt = server.requests[0]["messages"][0]["content"]
    assert sorted(responder.seen) == sorted(PAIRS)
    for grade, meaning in GRADE_MEANINGS.items():
        assert f"{grade} = {meaning}" in prompt
    out = tmp_path / "out"
    assert lines(out / "umbrela_qrels.trec") == EXPECTED_QRELS
    sidecar = json.loads((out / "umbrela_qrels.trec.llm.json").read_text())
    assert sidecar["method"] == "umbrela" and sidecar["qrels"] == "umbrela_qrels.trec"
    assert sidecar["judge"]["model"] == "judge-m" and sidecar["judge"]["temperature"] == 0.0
    assert [(r["qid"], r["doc_id"], r["grade"]) for r in sidecar["llm_labels"]] == [
        (q, d, g) for (q, d), (g, _) in GRADES.items()
    ]
    assert sidecar["counts"] == {
        "original_judgments": 5,
        "llm_labels": 8,
        "failed": 0,
        "by_grade": {"0": 4, "1": 2, "2": 1, "3": 1},
    }
    assert sidecar["pool"]["pooled_pairs"] == 13 and sidecar["pool"]["already_judged"] == 5
    printed = capsys.readouterr().out
    assert "8 labelled (8 asked now), 0 failed" in printed and "grades: 0: 4, 1: 2, 2: 1, 3: 1" in printed
    # a second run finds every pair in the log: nothing is sent, the same files
    with ScriptedChatServer(Responder()) as server:
        assert main(umbrela_args(native_mini, tmp_path, server.base_url)) == 0
        assert server.request_count == 0
    assert lines(out / "umbrela_qrels.trec") == EXPECTED_QRELS


def test_the_filled_qrels_work_with_score_pool_and_qrels_agree(native_mini, tmp_path, capsys):
    with ScriptedChatServer(Responder()) as server:
        assert main(umbrela_args(native_mini, tmp_path, server.base_url)) == 0
    qrels = tmp_path / "out" / "umbrela_qrels.trec"
    assert read_qrels(qrels)["c1_5"] == {"varn-depth": 3}
    run_a, run_b = str(tmp_path / "run_a.trec"), str(tmp_path / "run_b.trec")
    original = tmp_path / "original.qrels"
    original.write_text("\n".join(ORIGINAL_LINES) + "\n")
    assert main(["score", "--run", run_a, "--qrels", str(qrels), "--k", "2"]) == 0
    pool_json = tmp_path / "pool.json"
    assert (
        main(
            ["pool", run_a, run_b, "--qrels", str(original), "--refined-qrels", str(qrels), "--output", str(pool_json)]
        )
        == 0
    )
    assert pool_json.exists()
    capsys.readouterr()
    assert main(["qrels", "agree", str(qrels), str(original), "--threshold", "1"]) == 0
    assert "shared 5 (only A 8, only B 0)" in capsys.readouterr().out  # the original lines are kept as they were


def test_unparsable_replies_fail_the_pair_count_in_the_exit_code_and_are_asked_again(native_mini, tmp_path, capsys):
    broken = ("c1_2", "varn-depth")
    responder = Responder(bad={broken})
    with ScriptedChatServer(responder) as server:
        code = main(umbrela_args(native_mini, tmp_path, server.base_url, "--max-failure-rate", "0.1"))
        assert server.request_count == 7 + 3  # the broken pair: the question and two re-asks
    assert code == 1  # 1 of 8 failed: 12.5% > 10%
    err = capsys.readouterr().err
    assert "failed on 1 of 8 pairs" in err and "final score" in err
    out = tmp_path / "out"
    assert lines(out / "umbrela_qrels.trec") == [line for line in EXPECTED_QRELS if line != "c1_2 0 varn-depth 2"]
    sidecar = json.loads((out / "umbrela_qrels.trec.llm.json").read_text())
    assert sidecar["counts"]["failed"] == 1 and sidecar["counts"]["llm_labels"] == 7
    # under the limit: exit 0, the same counts
    retry = Responder(bad={broken})
    with ScriptedChatServer(retry) as server:
        assert main(umbrela_args(native_mini, tmp_path, server.base_url)) == 0  # default limit 25%
    assert retry.seen == [broken] * 3  # only the failed pair is asked again
    with ScriptedChatServer(Responder()) as server:
        assert main(umbrela_args(native_mini, tmp_path, server.base_url)) == 0
        assert server.request_count == 1
    assert lines(out / "umbrela_qrels.trec") == EXPECTED_QRELS


@pytest.mark.slow
def test_killed_run_resumes_asking_only_the_missing_pairs(native_mini, tmp_path):
    held = PAIRS[4]  # one request in flight at a time: pairs 1-4 are logged when it hangs
    first = Responder(hold=held)
    with ScriptedChatServer(first) as server:
        args = umbrela_args(native_mini, tmp_path, server.base_url, "--concurrency", "1")
        proc = subprocess.Popen(
            [sys.executable, "-m", "mtrbench.cli", *args],
            env=dict(os.environ, OPENAI_API_KEY="sk-test"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert first.held.wait(60), proc.communicate(timeout=5)
            log = tmp_path / "out" / "umbrela.jsonl"
            deadline = time.time() + 10
            while time.time() < deadline and len(log.read_text().splitlines()) < 4:
                time.sleep(0.05)
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        finally:
            first.release.set()
            if proc.poll() is None:
                proc.kill()
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["qid"], r["doc_id"]) for r in logged] == PAIRS[:4]
    assert not (tmp_path / "out" / "umbrela_qrels.trec").exists()
    second = Responder()
    with ScriptedChatServer(second) as server:
        base = args.index("--llm-base-url") + 1
        assert main([*args[:base], server.base_url, *args[base + 1 :]]) == 0
        assert server.request_count == 4
    assert sorted(second.seen) == sorted(PAIRS[4:])
    assert lines(tmp_path / "out" / "umbrela_qrels.trec") == EXPECTED_QRELS


def test_dry_run_sends_nothing_and_bad_input(native_mini, tmp_path, capsys):
    with ScriptedChatServer(Responder()) as server:
        assert main(umbrela_args(native_mini, tmp_path, server.base_url, "--dry-run")) == 0
        assert server.request_count == 0
    printed = capsys.readouterr().out
    assert "##final score: N" in printed and "8 of 8 pooled unjudged pairs to label" in printed
    assert not (tmp_path / "out" / "umbrela_qrels.trec").exists()
    base = umbrela_args(native_mini, tmp_path, "http://127.0.0.1:9/v1")
    for extra, message in (
        (["--adjudicator", "x"], "--adjudicator: DREAM's option(s), not used by --method umbrela"),
        (["--depth", "0"], "--depth must be at least 1"),
    ):
        assert main(base + extra) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and err.count("\n") == 1
    no_runs = [a for a in base if not a.endswith(".trec")]
    no_runs.remove("--runs")
    assert main(no_runs) == 2
    assert "--method umbrela pools runs" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "grade"),
    [
        ("##final score: 2", 2),
        ("Intent: find depth.\nM: 2\nT: 1\n##final score: 3", 3),
        ("**Final Score:** 0", 0),
        ('"final_score": 1', 1),
        ("final score: 1 ... on reflection, ##final score: 2", 2),
        (" 3 ", 3),
        ("2.", 2),
    ],
)
def test_parse_grade_reply_accepts(text, grade):
    assert parse_grade_reply(text) == grade


@pytest.mark.parametrize("text", ["", "relevant", "##final score: 4", "final score: 10", "score 2 of 3", "12"])
def test_parse_grade_reply_rejects(text):
    with pytest.raises(ValueError, match="final score"):
        parse_grade_reply(text)
