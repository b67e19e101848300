"""`mtrbench generate` end to end against a scripted chat-completions server on 127.0.0.1.

The scripted generator reads each prompt as a model would (which question, which passages in which
slot) and answers from that alone; expected passages, prompts and counts are written out by hand from
the run file and the task's JSONL, never taken from the command's own output.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cli_run import run_cli
from llm_server import Reply, ScriptedChatServer

from mtrbench.cli import main

SECRET = "sk-test-GENERATE-0123456789abcdef"
KEY_ENV = "MTRBENCH_GENERATE_TEST_KEY"
ROOT = Path(__file__).resolve().parents[2]

# A hand-written run for tests/data/native-mini. c1_1 has a tie (varn-fish, orrin-open at 2.0): trec_eval
# order breaks it by document id descending, so varn-fish ranks second.
RUN = """c1_1 Q0 orrin-open 3 2.0 t
c1_1 Q0 varn-depth 1 3.0 t
c1_1 Q0 varn-fish 2 2.0 t
c1_1 Q0 orrin-design 4 0.5 t
c1_2 Q0 varn-fish 1 9.0 t
c1_2 Q0 varn-depth 2 8.0 t
c1_3 Q0 orrin-design 1 1.0 t
c1_4 Q0 orrin-design 1 5.0 t
c1_4 Q0 orrin-open 2 4.0 t
c1_4 Q0 varn-fish 3 3.0 t
c1_5 Q0 varn-depth 1 1.0 t
"""
TOP2 = {
    "c1_1": ["varn-depth", "varn-fish"],
    "c1_2": ["varn-fish", "varn-depth"],
    "c1_3": ["orrin-design"],
    "c1_4": ["orrin-design", "orrin-open"],
    "c1_5": ["varn-depth"],
}
QUESTIONS = {
    "How deep is Lake Varnholm?": "c1_1",
    "any fish in it?": "c1_2",
    "Who designed the Orrin Suspension Bridge?": "c1_3",
    "when did it open?": "c1_4",
    "thanks!": "c1_5",
}


def corpus_texts(native_mini: Path) -> dict[str, str]:
    rows = [json.loads(line) for line in (native_mini / "corpus.jsonl").read_text().splitlines() if line.strip()]
    return {r["_id"]: f"{r['title']}\n{r['text']}" for r in rows}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class ScriptedGenerator:
    """Answers from the prompt; ``script`` maps qid -> replies served in order (then a normal answer)."""

    def __init__(self, script: dict[str, list[Reply]] | None = None, hang_after: int | None = None) -> None:
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.hang_after = hang_after
        self.prompts: dict[str, list[str]] = {}
        self.lock = threading.Lock()
        self.count = 0

    def __call__(self, body: dict) -> Reply:
        content = body["messages"][-1]["content"]
        question = re.search(r"\nCurrent question: (.*)$", content).group(1)
        qid = QUESTIONS[question]
        with self.lock:
            self.count += 1
            self.prompts.setdefault(qid, []).append(content)
            if self.hang_after is not None and self.count > self.hang_after:
                return Reply(f"late answer for {qid} [1].", delay_s=30)
            queue = self.script.get(qid)
            if queue:
                return queue.pop(0)
        return Reply(f"Answer to {qid}, see [1].")


def write_run(tmp_path: Path) -> Path:
    folder = tmp_path / "result"
    folder.mkdir()
    path = folder / "mini.run.trec"
    path.write_text(RUN)
    return path


def generate_args(native_mini: Path, server: ScriptedChatServer, *extra: str) -> list[str]:
    return [
        "generate",
        "--task",
        str(native_mini),
        "--model",
        "gen-model",
        "--base-url",
        server.base_url,
        "--api-key-env",
        KEY_ENV,
        "--yes",
        "--quiet",
        *extra,
    ]


def test_generate_from_a_run_writes_the_contract_and_records_failures(native_mini, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, SECRET)
    run = write_run(tmp_path)
    cache = tmp_path / "llm.sqlite"
    script = {
        "c1_2": [Reply("busy", status=503)],  # transport failure: retried, then answered
        "c1_3": [Reply("   "), Reply(""), Reply("\n")],  # malformed (empty) three times: a failure after retries
        "c1_5": [Reply(f"invalid key {SECRET}", status=401)],  # not retryable; the echoed key must not leak
    }
    generator = ScriptedGenerator(script)
    with ScriptedChatServer(generator) as server:
        code = main(generate_args(native_mini, server, "--run", str(run), "--top-k", "2", "--llm-cache", str(cache)))
        printed = capsys.readouterr()
        auth = [v for h in server.headers for k, v in h.items() if k.lower() == "authorization"]
        per_qid = {qid: len(prompts) for qid, prompts in generator.prompts.items()}
    assert code == 1, printed.err  # failed turns make the exit status 1
    assert len(auth) == 8 and all(a == f"Bearer {SECRET}" for a in auth)  # the key was used ...
    out = run.parent / "mini.gen-model.full.generations.jsonl"
    records = read_jsonl(out)
    assert [r["qid"] for r in sorted(records, key=lambda r: r["qid"])] == ["c1_1", "c1_2", "c1_4"]
    # 1 + 2 parse retries for the malformed turn, one retry for the 503, one request for the 401
    assert per_qid == {"c1_1": 1, "c1_2": 2, "c1_3": 3, "c1_4": 1, "c1_5": 1}
    texts = corpus_texts(native_mini)
    for record in records:
        qid = record["qid"]
        assert record["passages"] == TOP2[qid]
        assert record["answer"] == f"Answer to {qid}, see [1]."
        assert {k: record[k] for k in ("generator", "history", "source")} == {
            "generator": "gen-model",
            "history": "full",
            "source": "run",
        }
        assert record["turn"] == int(qid[-1]) and record["conversation_id"] == "c1"
        prompt = generator.prompts[qid][-1]
        block = prompt.split("Passages:\n", 1)[1].split("\n\nCurrent question:", 1)[0]
        assert block == "\n\n".join(f"[{n}] {texts[d]}" for n, d in enumerate(TOP2[qid], 1))
    question_of = {v: k for k, v in QUESTIONS.items()}
    assert all(r["question"] == question_of[r["qid"]] for r in records)
    # full history: every earlier message, in order, before the passages
    c1_4 = generator.prompts["c1_4"][-1]
    assert (
        "Conversation history:\nUser: How deep is Lake Varnholm?\nAssistant: It is 212 metres deep.\n"
        "User: any fish in it?\nAssistant: Yes, the Varnholm char.\nUser: Who designed the Orrin Suspension "
        "Bridge?\nAssistant: Hedda Lorne.\n\nPassages:"
    ) in c1_4
    assert "Conversation history" not in generator.prompts["c1_1"][-1]  # first turn: no history
    failures = {f["qid"]: f for f in read_jsonl(run.parent / "mini.gen-model.full.generations.failures.jsonl")}
    assert set(failures) == {"c1_3", "c1_5"}
    assert "unparseable after 3 attempts" in failures["c1_3"]["error"]
    # each malformed reply is kept beside the failure, as sent (the re-asks quoted them)
    assert [(m["attempt"], m["text"]) for m in failures["c1_3"]["malformed"]] == [(1, "   "), (2, ""), (3, "\n")]
    assert failures["c1_5"]["malformed"] == []  # a transport failure: no reply to keep
    assert "HTTP 401" in failures["c1_5"]["error"]
    # ... and never appears in any output, log or cache
    for path in [out, run.parent / "mini.gen-model.full.generations.failures.jsonl", *tmp_path.glob("llm.sqlite*")]:
        assert SECRET not in path.read_bytes().decode("utf-8", "replace"), path
    assert SECRET not in printed.out + printed.err
    assert "2 failed of 5" in printed.out

    # a rerun asks only for the two failed turns (the cache holds only replies that parsed)
    with ScriptedChatServer(ScriptedGenerator()) as server:
        assert (
            main(generate_args(native_mini, server, "--run", str(run), "--top-k", "2", "--llm-cache", str(cache))) == 0
        )
        assert server.request_count == 2
    records = read_jsonl(out)
    assert sorted(r["qid"] for r in records) == ["c1_1", "c1_2", "c1_3", "c1_4", "c1_5"]
    assert not (run.parent / "mini.gen-model.full.generations.failures.jsonl").exists()


def test_oracle_last_response_and_gold_rewrite(native_mini, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, SECRET)
    generator = ScriptedGenerator()
    out = tmp_path / "oracle.jsonl"
    with ScriptedChatServer(generator) as server:
        assert (
            main(
                generate_args(
                    native_mini,
                    server,
                    "--oracle",
                    "--history",
                    "last-response",
                    "--output",
                    str(out),
                    "--no-llm-cache",
                )
            )
            == 0
        )
    records = {r["qid"]: r for r in read_jsonl(out)}
    # gold passages, highest grade first; c1_5 has none and is skipped (counted)
    assert {q: r["passages"] for q, r in records.items()} == {
        "c1_1": ["varn-depth"],
        "c1_2": ["varn-fish"],
        "c1_3": ["orrin-design"],
        "c1_4": ["orrin-open", "orrin-design"],
    }
    assert all(r["source"] == "oracle" and r["history"] == "last-response" for r in records.values())
    assert "warning: 1 turns without gold passages (oracle)" in capsys.readouterr().out
    # CORAL's last response: all earlier questions, then only the last answer
    assert (
        "Conversation history:\nUser: How deep is Lake Varnholm?\nUser: any fish in it?\nUser: Who designed "
        "the Orrin Suspension Bridge?\nAssistant: Hedda Lorne.\n\nPassages:"
    ) in generator.prompts["c1_4"][0]

    # gold rewrite: the stand-alone question replaces the history; the record keeps the raw question
    with ScriptedChatServer(lambda body: Reply("ok [1]")) as server:
        out2 = tmp_path / "rewrite.jsonl"
        assert (
            main(
                generate_args(
                    native_mini, server, "--oracle", "--history", "rewrite", "--output", str(out2), "--no-llm-cache"
                )
            )
            == 0
        )
        prompts = [b["messages"][-1]["content"] for b in server.requests]
    c1_4 = next(p for p in prompts if p.endswith("Current question: When did the Orrin Suspension Bridge open?"))
    assert "Conversation history" not in c1_4
    rec = {r["qid"]: r for r in read_jsonl(out2)}["c1_4"]
    assert rec["question"] == "when did it open?" and rec["rewrite"] == "When did the Orrin Suspension Bridge open?"
    assert rec["history"] == "rewrite" and rec["history_source"] == "gold"

    # the same file cannot take generations made with other settings (the old flag name "raw" is "full")
    with ScriptedChatServer(lambda body: Reply("ok [1]")) as server:
        assert (
            main(
                generate_args(
                    native_mini, server, "--oracle", "--history", "raw", "--output", str(out2), "--no-llm-cache"
                )
            )
            == 2
        )
        assert server.request_count == 0
    err = capsys.readouterr().err
    assert "generated with other settings" in err and "history 'rewrite' (now 'full')" in err


def test_summary_history_is_written_by_the_rewriter_then_used(native_mini, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    seen: list[str] = []

    def respond(body: dict) -> Reply:
        content = body["messages"][-1]["content"]
        seen.append(body["model"])
        if body["messages"][0]["content"].startswith("You condense"):
            question = re.search(r"^Current question: (.*)$", content, re.M).group(1)
            return Reply(f"Summary: talk before {QUESTIONS[question]}")
        return Reply("answer [1]")

    out = tmp_path / "summary.jsonl"
    with ScriptedChatServer(respond) as server:
        assert (
            main(
                generate_args(
                    native_mini,
                    server,
                    "--oracle",
                    "--history",
                    "summary:llm",
                    "--output",
                    str(out),
                    "--no-llm-cache",
                    "--rewriter-model",
                    "sum-model",
                    "--rewriter-base-url",
                    server.base_url,
                )
            )
            == 0
        )
        prompts = [b["messages"][-1]["content"] for b in server.requests if b["model"] == "gen-model"]
    # 3 summaries (c1_1 has no history, c1_5 no gold), then 4 answers
    assert seen.count("sum-model") == 3 and seen.count("gen-model") == 4
    c1_3 = next(p for p in prompts if p.endswith("Current question: Who designed the Orrin Suspension Bridge?"))
    assert c1_3.startswith("Summary of the conversation so far:\ntalk before c1_3\n\nPassages:")
    records = {r["qid"]: r for r in read_jsonl(out)}
    assert records["c1_3"]["summary"] == "talk before c1_3" and records["c1_3"]["history"] == "summary:llm"
    assert records["c1_3"]["history_source"] == "llm:sum-model"


def test_a_failed_rewrite_keeps_its_malformed_replies_redacted(native_mini, tmp_path, monkeypatch, capsys):
    """generate --history rewrite:llm: c1_3's rewriter replies are off-format (and echo the key): the turn is
    a failure of the rewrite stage listing the three replies redacted; c1_2's first reply is empty and its
    re-ask good: answered, its malformed reply kept on the answer's record."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    asked: dict[str, int] = {}

    def respond(body: dict) -> Reply:
        content = body["messages"][-1]["content"]
        question = re.search(r"(?:Last|Current) question: (.*)$", content, re.M).group(1)
        qid = QUESTIONS[question]
        rewriting = body["model"] == "rw-model"
        asked[f"{body['model']}:{qid}"] = asked.get(f"{body['model']}:{qid}", 0) + 1
        if rewriting:
            return Reply(f"I cannot.\nMy key is {SECRET}." if qid == "c1_3" else f"Rewrite: {question}")
        return Reply("" if qid == "c1_2" and asked[f"gen-model:{qid}"] == 1 else "answer [1]")

    out = tmp_path / "rw.jsonl"
    with ScriptedChatServer(respond) as server:
        code = main(
            generate_args(
                native_mini,
                server,
                "--oracle",
                "--history",
                "rewrite:llm",
                "--output",
                str(out),
                "--no-llm-cache",
                "--rewriter-model",
                "rw-model",
                "--rewriter-base-url",
                server.base_url,
                "--max-failure-rate",
                "0.5",
            )
        )
    assert code == 0, capsys.readouterr().err
    assert asked["rw-model:c1_3"] == 3 and "gen-model:c1_3" not in asked  # 1 + 2 re-asks, then no answer asked
    [failure] = read_jsonl(tmp_path / "rw.failures.jsonl")
    assert (failure["qid"], failure["stage"]) == ("c1_3", "rewrite:llm")
    assert "no 'Rewrite:' line" in failure["error"] or "unparseable" in failure["error"]
    assert [m["attempt"] for m in failure["malformed"]] == [1, 2, 3]
    assert all(m["text"] == "I cannot.\nMy key is [redacted]." for m in failure["malformed"])
    records = {r["qid"]: r for r in read_jsonl(out)}
    assert [(m["attempt"], m["text"]) for m in records["c1_2"]["malformed"]] == [(1, "")]
    assert "malformed" not in records["c1_4"]
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_bytes().decode("utf-8", "replace"), path


@pytest.mark.slow
def test_killed_generation_resumes_with_only_unfinished_turns(native_mini, tmp_path, monkeypatch):
    """A real process killed mid-run (its third request hangs), then a rerun: the server sees only the
    three turns that were not written, and the torn line a kill can leave is dropped with a warning."""
    run = write_run(tmp_path)
    out = run.parent / "mini.gen-model.full.generations.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{KEY_ENV: SECRET})
    with ScriptedChatServer(ScriptedGenerator(hang_after=2)) as server:
        args = generate_args(native_mini, server, "--run", str(run), "--no-llm-cache", "--concurrency", "1")
        proc = subprocess.Popen(
            [sys.executable, "-m", "mtrbench.cli", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while server.request_count < 3 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert server.request_count == 3, proc.communicate(timeout=5)
        proc.send_signal(signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=10)
    assert SECRET not in stdout + stderr
    finished = read_jsonl(out)
    assert len(finished) == 2
    done = {r["qid"] for r in finished}
    with out.open("a") as handle:  # what a kill in the middle of a write leaves
        handle.write('{"qid": "c1_9", "answer": "half')

    generator = ScriptedGenerator()
    monkeypatch.setenv(KEY_ENV, SECRET)
    with ScriptedChatServer(generator) as server:
        result = run_cli(*generate_args(native_mini, server, "--run", str(run), "--no-llm-cache"))  # in-process
        assert result.returncode == 0, result.stderr
        assert server.request_count == 3
        assert set(generator.prompts) == {"c1_1", "c1_2", "c1_3", "c1_4", "c1_5"} - done
    assert "warning: 1 unreadable line(s)" in result.stdout
    assert SECRET not in result.stdout + result.stderr
    lines = out.read_text().splitlines()
    records = [json.loads(line) for line in lines]  # every line valid JSON: the torn tail was cut
    assert sorted(r["qid"] for r in records) == ["c1_1", "c1_2", "c1_3", "c1_4", "c1_5"]


def test_dry_run_sends_nothing(native_mini, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, SECRET)
    run = write_run(tmp_path)
    with ScriptedChatServer(ScriptedGenerator()) as server:
        assert main(generate_args(native_mini, server, "--run", str(run), "--dry-run")) == 0
        assert server.request_count == 0
    out = capsys.readouterr().out
    assert "dry run: 5 requests" in out and "[1] Lake Varnholm" in out
    assert not (run.parent / "mini.gen-model.full.generations.jsonl").exists()


# What the version before eval's --history names wrote for c1_1 and c1_2 of RUN with --history raw --top-k 2
# (its answer prompt for "raw" hashed to dd3b9a4cb6dd; the rule's text is unchanged under the name "full").
LEGACY_RAW = [
    {
        "qid": qid,
        "conversation_id": "c1",
        "turn": turn,
        "question": question,
        "answer": f"old {qid} [1].",
        "passages": TOP2[qid],
        "generator": "gen-model",
        "history": "raw",
        "source": "run",
        "history_source": "task",
        "top_k": 2,
        "prompt_hash": "dd3b9a4cb6dd",
        "cached": False,
        "time": "2024-05-01T10:00:00Z",
    }
    for qid, turn, question in (("c1_1", 1, "How deep is Lake Varnholm?"), ("c1_2", 2, "any fish in it?"))
]


@pytest.mark.parametrize("flag", [[], ["--history", "full"], ["--history", "raw"]])
def test_a_file_written_with_the_old_history_name_resumes(native_mini, tmp_path, monkeypatch, capsys, flag):
    """A generations file from before the rename (history "raw", named ...raw.generations.jsonl beside the run)
    is found, read as "full" and resumed: only the three missing turns are asked, written as "full"."""
    from mtrbench.formats.generations import read_generations

    monkeypatch.setenv(KEY_ENV, SECRET)
    run = write_run(tmp_path)
    legacy = run.parent / "mini.gen-model.raw.generations.jsonl"
    legacy.write_text("".join(json.dumps(r) + "\n" for r in LEGACY_RAW))
    generator = ScriptedGenerator()
    with ScriptedChatServer(generator) as server:
        assert main(generate_args(native_mini, server, "--run", str(run), "--top-k", "2", "--no-llm-cache", *flag)) == 0
        assert server.request_count == 3
    assert set(generator.prompts) == {"c1_3", "c1_4", "c1_5"}
    out = capsys.readouterr().out
    assert f"generations: {legacy} (2 turns already there, 3 generated" in out
    assert not (run.parent / "mini.gen-model.full.generations.jsonl").exists()
    written = read_jsonl(legacy)
    assert [r["history"] for r in written] == ["raw", "raw", "full", "full", "full"]  # old lines kept as they are
    assert {g.history for g in read_generations(legacy).values()} == {"full"}  # the judge reads one name


def test_generation_takes_evals_history_names():
    from mtrbench.generation.runner import GENERATION_HISTORIES, generation_history
    from mtrbench.serialize.history import MODEL_STRATEGIES, get_strategy

    assert GENERATION_HISTORIES == ("full", "last-response", "rewrite", "rewrite:llm", "summary:llm")
    assert all(get_strategy(name).name == name for name in GENERATION_HISTORIES)
    # every model-written history but the query expansions, whose pseudo-documents are retrieval queries, not a
    # conversation a generator reads: generation refuses them with one line
    from mtrbench.infra.errors import UserInputError
    from mtrbench.serialize.expansion import EXPANSION_KINDS

    assert set(MODEL_STRATEGIES) - set(EXPANSION_KINDS) <= set(GENERATION_HISTORIES)
    for expansion in EXPANSION_KINDS:
        with pytest.raises(UserInputError, match=f"for generation, got '{expansion}'"):
            generation_history(expansion)
    assert [generation_history(old) for old in ("raw", "summary", "full", "rewrite:llm")] == [
        "full",
        "summary:llm",
        "full",
        "rewrite:llm",
    ]


def test_generation_reads_what_a_history_needs_from_evals_strategy():
    from mtrbench.generation.model_history import RewriterOptions
    from mtrbench.generation.runner import generation_strategy, history_source
    from mtrbench.infra.errors import UserInputError
    from mtrbench.llm.config import JudgeConfig

    rewriter = RewriterOptions(JudgeConfig(name="rw", model="rw-model"))
    needs = {
        name: (generation_strategy(name).needs_gold_rewrite, generation_strategy(name).needs_rewriter)
        for name in ("full", "last-response", "rewrite", "rewrite:llm", "summary:llm", "raw", "summary")
    }
    assert needs == {
        "full": (False, False),
        "last-response": (False, False),
        "rewrite": (True, False),
        "rewrite:llm": (False, True),
        "summary:llm": (False, True),
        "raw": (False, False),
        "summary": (False, True),
    }
    assert [history_source(generation_strategy(n), rewriter) for n in ("full", "rewrite", "summary:llm")] == [
        "task",
        "gold",
        "llm:rw-model",
    ]
    with pytest.raises(UserInputError, match="--history rewrite:llm needs a rewriter model"):
        history_source(generation_strategy("rewrite:llm"), None)
    with pytest.raises(UserInputError, match="--history must be one of full, last-response, rewrite"):
        generation_strategy("window:3")


def test_old_summary_and_model_rewrite_records_read_as_the_new_names(tmp_path):
    from mtrbench.formats.generations import read_generations
    from mtrbench.generation.store import GenerationStore

    path = tmp_path / "old.jsonl"
    rows = [
        {"qid": "a", "answer": "x", "history": "summary", "history_source": "llm:m"},
        {"qid": "b", "answer": "x", "history": "rewrite", "history_source": "llm:m"},
        {"qid": "c", "answer": "x", "history": "rewrite", "history_source": "gold"},
        {"qid": "d", "answer": "x", "history": "last-response", "history_source": "task"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert {q: g.history for q, g in read_generations(path).items()} == {
        "a": "summary:llm",
        "b": "rewrite:llm",
        "c": "rewrite",
        "d": "last-response",
    }
    # the resume check compares the current names: an old summary file resumes under summary:llm
    summary = tmp_path / "summary.jsonl"
    summary.write_text(json.dumps(rows[0]) + "\n")
    stored = GenerationStore(summary).read({"history": "summary:llm", "history_source": "llm:m"})
    assert set(stored.done) == {"a"} and stored.done["a"]["history"] == "summary:llm"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--oracle", "--top-k", "0"], "--top-k must be at least 1"),
        (
            ["--oracle", "--history", "questions"],
            "--history must be one of full, last-response, rewrite, rewrite:llm, "
            "summary:llm for generation, got 'questions'",
        ),
        (["--run", "missing.trec"], "not found"),
    ],
)
def test_bad_input_is_one_error_line(native_mini, tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, SECRET)
    code = main(
        [
            "generate",
            "--task",
            str(native_mini),
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--api-key-env",
            KEY_ENV,
            "--yes",
            *args,
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and message in err and err.count("\n") == 1
