"""`mtrbench rag` end to end on the sample task against a scripted chat server on 127.0.0.1.

The server plays generator and judge: it answers a generation prompt from the question it reads, and gives a
verdict decided by the test from the question alone. Expected RAGAlign comes from pytrec_eval on the written
run file and scipy, never from mtrbench's own numbers; request counts are taken at the server.
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
import pytrec_eval
from cli_run import run_cli
from llm_server import Reply, ScriptedChatServer
from scipy.stats import pointbiserialr

from mtrbench.cli import main
from mtrbench.data import load_task, resolve_card
from mtrbench.formats.run import read_run

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-test-RAG-5f3e9a0c1b2d"
KEY_ENV = "MTRBENCH_RAG_TEST_KEY"
CONVERSATIONS = 2  # --limit: the sample's first two conversations, cheap on 2 cores
LIMIT = 13  # their turns (6 + 7)


def sample():
    return load_task(resolve_card("mtrbench-sample"))


def correct(question: str) -> bool:
    """The scripted judge's verdict, decided from the question alone (so the test knows it in advance)."""
    return len(question) % 3 != 0


class GeneratorAndJudge:
    def __init__(self, hang_after: int | None = None) -> None:
        self.hang_after = hang_after
        self.generation_prompts: dict[str, str] = {}  # question -> last generation prompt
        self.generation_requests = 0
        self.judge_requests = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> Reply:
        content = body["messages"][-1]["content"]
        judged = re.search(r"\[Current question\]\n(.*?)\n\[End of current question\]", content, re.S)
        with self.lock:
            if judged:
                self.judge_requests += 1
                verdict = "CORRECT" if correct(judged.group(1)) else "INCORRECT"
                return Reply(f"Checked against the reference.\nVerdict: [[{verdict}]]")
            question = re.search(r"\nCurrent question: (.*)$", content).group(1)
            self.generation_requests += 1
            self.generation_prompts[question] = content
            if self.hang_after is not None and self.generation_requests > self.hang_after:
                return Reply("too late [1]", delay_s=60)
        return Reply(f"About '{question}': see the first passage [1].")


def rag_args(server: ScriptedChatServer, out: Path, *extra: str) -> list[str]:
    return [
        "rag",
        "--model",
        "bm25",
        "--output-dir",
        str(out),
        "--generator-model",
        "gen-m",
        "--generator-base-url",
        server.base_url,
        "--judge-model",
        "judge-m",
        "--api-key-env",
        KEY_ENV,
        "--limit",
        str(CONVERSATIONS),
        "--passages",
        "3",
        "--yes",
        "--quiet",
        *extra,
    ]


def expected_ragalign(run_path: Path, qids: list[str], task) -> tuple[float, float]:
    qrels = {q: d for q, d in task.qrels().items() if q in qids}
    run = {q: docs for q, docs in read_run(run_path).items() if q in qids}
    measured = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "success.10"}).evaluate(run)
    by_qid = {q.qid: q.query for q in task.queries}
    scored = [q for q in qids if q in measured]
    verdicts = [int(correct(by_qid[q])) for q in scored]
    agreement = sum(int(measured[q]["success_10"] == v) for q, v in zip(scored, verdicts)) / len(scored)
    r = pointbiserialr(verdicts, [measured[q]["ndcg_cut_10"] for q in scored]).statistic
    return agreement, r


def test_rag_end_to_end_and_rerun_asks_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "results"
    task = sample()
    first = [q for q in task.queries][:LIMIT]
    server_side = GeneratorAndJudge()
    with ScriptedChatServer(server_side, with_headers=False) as server:
        assert main(rag_args(server, out, "--llm-cache", str(tmp_path / "llm.sqlite"))) == 0
        assert server_side.generation_requests == LIMIT and server_side.judge_requests == LIMIT
        auth = [v for h in server.headers for k, v in h.items() if k.lower() == "authorization"]
        assert auth and all(a == f"Bearer {SECRET}" for a in auth)  # the key reached the server, and only there
    printed = capsys.readouterr()

    reports = list(out.rglob("*.rag.json"))
    assert len(reports) == 1
    report = json.loads(reports[0].read_text())
    folder = reports[0].parent
    run_path = folder / report["retrieval"]["run"]
    assert report["complete"] is True
    assert reports[0].name == "mtrbench-sample.gen-m.full.rag.json"

    # the generator saw the top 3 passages of the written run, in rank order
    run = read_run(run_path)
    corpus = {d: task.corpus.document_text(task.corpus.position(d), title_separator="\n") for d in task.corpus.ids}
    for q in first:
        top = sorted(run[q.qid].items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        prompt = server_side.generation_prompts[q.query]
        positions = [prompt.index(f"[{n}] {corpus[d]}") for n, (d, _) in enumerate(top, 1)]
        assert positions == sorted(positions)

    # RAGAlign over the generated turns equals pytrec_eval + scipy on the same run and verdicts
    qids = [q.qid for q in first]
    agreement, r = expected_ragalign(run_path, qids, task)
    alignment = report["ragalign"]
    binary, graded = alignment["ragalign_at_10"], alignment["ragalign_ndcg_at_10"]
    assert binary["n"] == graded["n"] == LIMIT
    assert binary["value"] == pytest.approx(agreement, abs=1e-12)
    assert graded["value"] == pytest.approx(r, abs=1e-9)
    assert report["judge"]["accuracy"] == pytest.approx(sum(correct(q.query) for q in first) / LIMIT)
    assert {qid: row["verdict"] for qid, row in report["per_turn"].items()} == {
        q.qid: int(correct(q.query)) for q in first
    }
    assert set(report["measures"]["means"]) == {
        "bleu_1",
        "rouge_l",
        "cit_recall",
        "cit_precision",
        "token_f1",
        "exact_match",
    }

    # a second run finds everything done: no generation request and no judge request, even without the cache
    again = GeneratorAndJudge()
    with ScriptedChatServer(again) as server:
        assert main(rag_args(server, out, "--no-llm-cache")) == 0
        assert again.generation_requests == 0 and again.judge_requests == 0
    printed_again = capsys.readouterr()

    for path in [*folder.rglob("*"), *tmp_path.glob("llm.sqlite*")]:
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    for text in (printed.out, printed.err, printed_again.out, printed_again.err):
        assert SECRET not in text


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_rag_killed_during_generation_resumes_with_only_unfinished_turns(tmp_path, monkeypatch):
    out = tmp_path / "results"
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{KEY_ENV: SECRET})
    done_before_kill = 5
    killed = GeneratorAndJudge(hang_after=done_before_kill)
    with ScriptedChatServer(killed) as server:
        args = rag_args(server, out, "--no-llm-cache", "--concurrency", "1")
        proc = subprocess.Popen(
            [sys.executable, "-m", "mtrbench.cli", *args],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        deadline = time.monotonic() + 240
        while killed.generation_requests <= done_before_kill and time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"rag exited early: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.2)
        assert killed.generation_requests == done_before_kill + 1  # the sixth hangs: the process is mid-generation
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert killed.judge_requests == 0
    generations = next(out.rglob("*.generations.jsonl"))
    assert len([l for l in generations.read_text().splitlines() if l.strip()]) == done_before_kill

    resumed = GeneratorAndJudge()
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.chdir(tmp_path)
    with ScriptedChatServer(resumed) as server:
        done = run_cli(*rag_args(server, out, "--no-llm-cache"))  # the rerun needs no process of its own
        assert done.returncode == 0, done.stderr[-2000:]
    task = sample()
    first = task.queries[:LIMIT]
    written_first = {json.loads(l)["question"] for l in generations.read_text().splitlines()[:done_before_kill]}
    # only the turns the killed run had not written are asked again, each once; all of them are judged
    assert resumed.generation_requests == LIMIT - done_before_kill
    assert set(resumed.generation_prompts) == {q.query for q in first} - written_first
    assert resumed.judge_requests == LIMIT
    report = json.loads(next(out.rglob("*.rag.json")).read_text())
    assert report["complete"] is True and len(report["per_turn"]) == LIMIT


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--passages", "0"], "--passages must be at least 1"),
        (["--history", "full,current"], "rag takes one --history strategy"),
        (["--measures", "nDCG@10"], "not a generation measure"),
        (["--ragalign", "BLEU-1"], "not a RAGAlign measure"),
    ],
)
def test_bad_rag_input_is_one_error_line_before_any_request(extra, message, tmp_path, capsys):
    asked = GeneratorAndJudge()
    with ScriptedChatServer(asked) as server:
        code = main(rag_args(server, tmp_path / "results", *extra))
        assert server.request_count == 0
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1 and message in errors[0], err
    assert "Traceback" not in err


def test_a_rag_run_named_by_the_old_history_name_is_resumed_under_it(tmp_path):
    """Generation took eval's history names (full, not raw): a rag folder from before keeps its files."""
    from mtrbench.pipeline.rag import rag_stem
    from mtrbench.results.result import Result

    document = {"task_name": "t", "scores": {"test": [{}]}, "mtrbench": {"files": {"run": "t.run.trec"}}}
    retrieval = Result(document, tmp_path / "t.json")
    assert rag_stem(retrieval, "org/gen", "full") == "t.org__gen.full"
    (tmp_path / "t.org__gen.raw.generations.jsonl").write_text("")
    assert rag_stem(retrieval, "org/gen", "full") == "t.org__gen.raw"
    (tmp_path / "t.org__gen.full.generations.jsonl").write_text("")
    assert rag_stem(retrieval, "org/gen", "full") == "t.org__gen.full"  # the new name wins once it exists
