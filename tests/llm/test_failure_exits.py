"""Every LLM-using command exits 1 when its model fails on every reply, whatever the kind of failure.

A real chat-completions server on 127.0.0.1 (tests/llm_server.py) fails every request in one way: HTTP 500, a
body that is not JSON, empty content, off-format text, or a reply slower than ``--timeout 0.3``. Retries are off
(``--max-retries 0``), so each item is asked once (off-format replies are re-asked by the client's parse retries,
still failing). For each command the expected count is worked out by hand from tests/data/native-mini (one
conversation, five user turns, each answered by the assistant; c1_5 has no gold passage), never read back from
the command. Checked for each case: exit 1, exactly one ``error:`` line naming failed/total, no number computed
from a failed reply in what was written, and the API key (set in the variable the commands read) in no file,
cache or output.

Off-format text is a failure only where a format is asked for: an answer (generate) and a summary
(summary:llm) are free text, so those two commands have no off-format case.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedChatServer

from mtrbench.cli import main

SECRET = "sk-test-FAILEXIT-7c1d0e9b5a3f"
KEY_ENV = "MTRBENCH_FAILURE_EXIT_TEST_KEY"
TIMEOUT = "0.3"
SLOW_MARK = "too-slow.case"  # present in a case's work folder when replies come after --timeout
OFF_FORMAT = "Happy to help with that.\nThere is a lot one could say here.\nLet me know what else you need."

# every reply fails in one way
FAILURES: dict[str, Reply] = {
    "http-500": Reply("internal error", status=500),
    "not-json": Reply(body="<html><body>502 Bad Gateway</body></html>"),
    "empty": Reply(""),
    "off-format": Reply(OFF_FORMAT),
    "too-slow": Reply("late, and well-formed [1]", delay_s=1.5),
}

# native-mini by hand: 5 user turns (c1_1..c1_5), each followed by an assistant answer; c1_5 ("thanks!") has
# no gold passage; 4 turns have an earlier turn (rewrite/summary requests).
TURNS, TURNS_WITH_GOLD, TURNS_WITH_HISTORY = 5, 4, 4
AUDIT_ALIGNMENT_ITEMS = 5  # one per (turn, gold document): c1_4 has two gold documents, c1_5 none
SYNTH_CONVERSATIONS = 2
SYNTH_CLUSTERING = [
    "--quiet",
    "--device",
    "cpu",
    "--cluster-size",
    "4",
    "--neighbours",
    "4",
    "--embedding-model",
    "./encoder",
]  # relative: the copied work folder is the working directory


@dataclass
class Case:
    """A command to run against the failing server, how many of its items fail, and what it wrote."""

    name: str
    args: Callable[[Path, str, Path], list[str]]  # (work folder, server URL, native-mini) -> argv
    expected: str  # the failed/total phrase of the error line
    check_outputs: Callable[[Path], None]  # nothing scored from a failed reply
    free_text: bool = False  # off-format text is a valid reply here


def _llm_flags(url: str, work: Path) -> list[str]:
    # --timeout 0.3 in the too-slow case only (tests run on busy machines: elsewhere a slow start is no failure)
    timeout = TIMEOUT if (work / SLOW_MARK).exists() else "30"
    return [
        "--api-key-env",
        KEY_ENV,
        "--llm-cache",
        str(work / "llm.sqlite"),
        "--timeout",
        timeout,
        "--max-retries",
        "0",
        "--yes",
    ]


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --- generate -------------------------------------------------------------------------------------------------


def _generate(work: Path, url: str, mini: Path) -> list[str]:
    return [
        "generate",
        "--task",
        str(mini),
        "--oracle",
        "--model",
        "gen-m",
        "--base-url",
        url,
        "--quiet",
        "--output",
        str(work / "gen.jsonl"),
        *_llm_flags(url, work),
    ]


def _generate_outputs(work: Path) -> None:
    assert not (work / "gen.jsonl").exists() or _jsonl(work / "gen.jsonl") == []  # no answer from a failed reply
    assert sorted(f["qid"] for f in _jsonl(work / "gen.failures.jsonl")) == ["c1_1", "c1_2", "c1_3", "c1_4"]


# --- judge run ------------------------------------------------------------------------------------------------


def _judge(work: Path, url: str, mini: Path) -> list[str]:
    generations = work / "answers.jsonl"
    generations.write_text(
        "".join(
            json.dumps(
                {
                    "qid": f"c1_{t}",
                    "answer": f"An answer to turn {t} [1].",
                    "passages": ["varn-depth"],
                    "generator": "g",
                }
            )
            + "\n"
            for t in range(1, TURNS + 1)
        )
    )
    return [
        "judge",
        "run",
        str(generations),
        "--task",
        str(mini),
        "--judge",
        "verdict",
        "--ragalign",
        "RAGAlign@10",
        "--measures",
        "",
        "--llm-model",
        "judge-m",
        "--llm-base-url",
        url,
        "--output-dir",
        str(work / "judge"),
        "--quiet",
        *_llm_flags(url, work),
    ]


def _judge_outputs(work: Path) -> None:
    scores = json.loads((work / "judge" / "scores.json").read_text())
    assert scores["judge"]["counts"]["answered"] == 0 and scores["judge"]["accuracy"] is None
    assert "ragalign" not in scores
    assert all(row["verdict"] is None for row in scores["per_turn"].values())
    assert _jsonl(work / "judge" / "verdicts.jsonl") == []


# --- rag ------------------------------------------------------------------------------------------------------


def _rag(work: Path, url: str, mini: Path) -> list[str]:
    return [
        "rag",
        "--model",
        "bm25",
        "--task",
        str(mini),
        "--output-dir",
        str(work / "results"),
        "--generator-model",
        "gen-m",
        "--generator-base-url",
        url,
        "--judge-model",
        "judge-m",
        "--passages",
        "2",
        "--quiet",
        *_llm_flags(url, work),
    ]


class RagServer:
    """Generation prompts answered well (off-format case only: the judge then fails); every judge reply and,
    otherwise, every generation reply fails."""

    def __init__(self, failure: Reply, judge_only: bool) -> None:
        self.failure, self.judge_only = failure, judge_only

    def __call__(self, body: dict) -> Reply:
        judging = "[End of current question]" in body["messages"][-1]["content"]
        return self.failure if judging or not self.judge_only else Reply("From the first passage [1].")


def _rag_outputs(stage: str) -> Callable[[Path], None]:
    def check(work: Path) -> None:
        [report] = list((work / "results").rglob("*.rag.json"))
        document = json.loads(report.read_text())
        assert document["failed_stage"] == stage and document["complete"] is False
        assert "ragalign" not in document
        if stage == "generation":
            assert document["generation"]["failed"] == TURNS and document["per_turn"] == {}
            generations = list((work / "results").rglob("*.generations.jsonl"))
            assert all(_jsonl(p) == [] for p in generations)
        else:
            assert document["judge"]["accuracy"] is None
            assert all(row.get("verdict") is None for row in document["per_turn"].values())

    return check


# --- synthesize -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def clustered(tmp_path_factory) -> Path:
    """Curated and clustered once (a tiny random-weight encoder on 24 documents of the sample corpus), copied into
    each case."""
    from tiny_model import make_tiny_model

    folder = tmp_path_factory.mktemp("clustered")
    make_tiny_model(folder / "encoder")
    config = folder / "encoder" / "sentence_bert_config.json"  # the tiny encoder has 128 positions
    config.write_text(json.dumps({**json.loads(config.read_text()), "max_seq_length": 128}))
    corpus_lines = (
        (Path(__file__).resolve().parents[2] / "tasks" / "mtrbench-sample" / "corpus.jsonl")
        .read_text(encoding="utf-8")
        .splitlines()[:24]
    )
    (folder / "corpus.jsonl").write_text("\n".join(corpus_lines) + "\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        assert (
            main(
                [
                    "synthesize",
                    str(folder / "corpus.jsonl"),
                    "--out",
                    str(folder / "work"),
                    "--stage",
                    "cluster",
                    *SYNTH_CLUSTERING,
                ]
            )
            == 0
        )
    return folder


def _synthesize(work: Path, url: str, mini: Path) -> list[str]:
    return [
        "synthesize",
        str(work / "corpus.jsonl"),
        "--out",
        str(work / "work"),
        "--llm-model",
        "agent-m",
        "--base-url",
        url,
        *SYNTH_CLUSTERING,
        "--conversations",
        str(SYNTH_CONVERSATIONS),
        "--turns",
        "2",
        "--concurrency",
        "2",
        *[a for a in _llm_flags(url, work) if a != "--yes"],
    ]


def _synthesize_outputs(work: Path) -> None:
    assert not (work / "work" / "task").exists()  # no task made of failed replies
    log = _jsonl(work / "work" / "generate" / "conversations.log.jsonl")
    assert len(log) == SYNTH_CONVERSATIONS and all(r["status"] == "dropped" for r in log)


# --- audit ----------------------------------------------------------------------------------------------------


def _audit(work: Path, url: str, mini: Path) -> list[str]:
    return [
        "audit",
        str(mini),
        "--dimensions",
        "alignment",
        "--llm-model",
        "judge-m",
        "--llm-base-url",
        url,
        "--output-dir",
        str(work / "audit"),
        "--quiet",
        *_llm_flags(url, work),
    ]


def _audit_outputs(work: Path) -> None:
    summary = json.loads((work / "audit" / "summary.json").read_text())
    [stats] = summary["aggregates"]["alignment"].values()
    assert stats["n"] == 0 and stats["mean"] is None and stats["failures"] == AUDIT_ALIGNMENT_ITEMS


# --- eval with a model-written history ------------------------------------------------------------------------


def _eval(history: str) -> Callable[[Path, str, Path], list[str]]:
    def args(work: Path, url: str, mini: Path) -> list[str]:
        return [
            "eval",
            "--task",
            str(mini),
            "--model",
            "bm25",
            "--history",
            history,
            "--output-dir",
            str(work / "results"),
            "--rewriter-model",
            "rw-m",
            "--rewriter-base-url",
            url,
            "--quiet",
            *_llm_flags(url, work),
        ]

    return args


def _eval_outputs(work: Path) -> None:
    # the full-history numbers are never saved under the model history's name: no result at all
    assert not list((work / "results").rglob("*.json")) if (work / "results").exists() else True


CASES = [
    Case(
        "generate",
        _generate,
        f"failed on {TURNS_WITH_GOLD} of {TURNS_WITH_GOLD} turns",
        _generate_outputs,
        free_text=True,
    ),
    Case("judge run", _judge, f"failed on {TURNS} of {TURNS} items", _judge_outputs),
    Case("rag", _rag, f"failed on {TURNS} of {TURNS}", _rag_outputs("generation")),
    Case(
        "synthesize",
        _synthesize,
        f"failed on {SYNTH_CONVERSATIONS} of {SYNTH_CONVERSATIONS} conversations",
        _synthesize_outputs,
    ),
    Case("audit", _audit, f"failed on {AUDIT_ALIGNMENT_ITEMS} of {AUDIT_ALIGNMENT_ITEMS} items", _audit_outputs),
    Case(
        "eval rewrite:llm",
        _eval("rewrite:llm"),
        f"failed on {TURNS_WITH_HISTORY} of {TURNS_WITH_HISTORY} requests",
        _eval_outputs,
    ),
    Case(
        "eval summary:llm",
        _eval("summary:llm"),
        f"failed on {TURNS_WITH_HISTORY} of {TURNS_WITH_HISTORY} requests",
        _eval_outputs,
        free_text=True,
    ),
]


def _params():
    for case in CASES:
        for failure in FAILURES:
            if failure == "off-format" and case.free_text:
                continue
            yield pytest.param(case, failure, id=f"{case.name}-{failure}")


@pytest.mark.parametrize("case, failure", list(_params()))
def test_every_llm_command_exits_1_naming_the_failures(
    case: Case, failure: str, native_mini, tmp_path, monkeypatch, capsys, request
):
    monkeypatch.setenv(KEY_ENV, SECRET)
    work = tmp_path / "work-case"
    work.mkdir()
    monkeypatch.chdir(work)  # nothing lands in the working directory's results/
    if case.name == "synthesize":
        shutil.copytree(request.getfixturevalue("clustered"), work, dirs_exist_ok=True)
    reply = FAILURES[failure]
    if failure == "too-slow":
        (work / SLOW_MARK).touch()
    expected, check_outputs = case.expected, case.check_outputs
    if case.name == "rag" and failure == "off-format":  # answers are free text: the judging stage fails
        expected, check_outputs = f"failed on {TURNS} of {TURNS} items", _rag_outputs("judging")
    responder = RagServer(reply, failure == "off-format") if case.name == "rag" else (lambda body: reply)
    with ScriptedChatServer(responder) as server:
        code = main(case.args(work, server.base_url, native_mini))
        deadline = time.monotonic() + 5  # a timed-out request reaches the busy server's handler late
        while server.request_count == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        asked = server.request_count
    printed = capsys.readouterr()
    errors = [line for line in printed.err.splitlines() if line.startswith("error:")]
    assert code == 1, printed.err[-3000:]
    assert len(errors) == 1 and expected in errors[0], printed.err[-3000:]
    assert "most common:" in errors[0] and "Traceback" not in printed.err
    assert asked > 0
    check_outputs(work)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in printed.out and SECRET not in printed.err


def test_rag_names_the_retrieval_stage_when_its_rewriter_fails(native_mini, tmp_path, monkeypatch, capsys):
    """rag --history rewrite:llm with a rewriter failing every request: stopped before generation, the stage
    named; a dry run of the same shows the rewriter's prompts and sends nothing."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.chdir(tmp_path)
    with ScriptedChatServer(lambda body: FAILURES["http-500"]) as server:
        args = [
            *_rag(tmp_path, server.base_url, native_mini),
            "--history",
            "rewrite:llm",
            "--rewriter-model",
            "rw-m",
            "--rewriter-base-url",
            server.base_url,
        ]
        assert main([*args, "--dry-run"]) == 0
        assert server.request_count == 0
        code = main(args)
        asked = server.request_count
    err = capsys.readouterr().err
    [line] = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 1 and line.startswith("error: rag stopped at the retrieval stage:")
    assert f"rewriter 'rw-m' failed on {TURNS_WITH_HISTORY} of {TURNS_WITH_HISTORY} requests" in line
    assert asked == TURNS_WITH_HISTORY  # the rewrites only: no generation request
    assert not list(tmp_path.rglob("*.generations.jsonl")) and not list(tmp_path.rglob("*.rag.json"))


def test_failures_within_the_share_are_a_warning_and_past_it_exit_1(native_mini, tmp_path, monkeypatch, capsys):
    """generate --oracle asks 4 turns; c1_2 fails (HTTP 500): 1 of 4 = 25% is within the default 0.25 (exit 0, the
    turn listed, 3 answers written), and past --max-failure-rate 0.2 (exit 1) with the same replies."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.chdir(tmp_path)

    def respond(body: dict) -> Reply:
        failing = body["messages"][-1]["content"].endswith("Current question: any fish in it?")
        return FAILURES["http-500"] if failing else Reply("An answer [1].")

    codes = {}
    for limit in ("0.25", "0.2"):
        work = tmp_path / limit
        work.mkdir()
        with ScriptedChatServer(respond) as server:
            codes[limit] = main([*_generate(work, server.base_url, native_mini), "--max-failure-rate", limit])
        assert sorted(r["qid"] for r in _jsonl(work / "gen.jsonl")) == ["c1_1", "c1_3", "c1_4"]
        assert [f["qid"] for f in _jsonl(work / "gen.failures.jsonl")] == ["c1_2"]
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert codes == {"0.25": 0, "0.2": 1}
    assert len(errors) == 1 and "failed on 1 of 4 turns (25% > --max-failure-rate 0.2" in errors[0]


@pytest.mark.parametrize("reasks", [0, 1])
def test_parse_retries_sets_how_often_an_unreadable_reply_is_asked_again(
    reasks, native_mini, tmp_path, monkeypatch, capsys
):
    """judge run against off-format replies: each of the 5 items is asked 1 + --parse-retries times (counted at
    the server), whatever the default (2) is."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.chdir(tmp_path)
    with ScriptedChatServer(lambda body: FAILURES["off-format"]) as server:
        code = main([*_judge(tmp_path, server.base_url, native_mini), "--parse-retries", str(reasks)])
        asked = server.request_count
    assert code == 1 and asked == TURNS * (1 + reasks), capsys.readouterr().err[-2000:]
    assert main([*_judge(tmp_path, "http://127.0.0.1:9/v1", native_mini), "--parse-retries", "-1"]) == 2
    assert "--parse-retries must be 0 or more, got -1" in capsys.readouterr().err
