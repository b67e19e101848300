"""`mtrbench rag --nuggets`: the nugget stage after judging, against a scripted chat server on 127.0.0.1 that plays
generator, verdict judge and nugget judge. Expected scores come from the replies the server chose (remembered), and
the four scores are computed here from nuggetizer's definitions."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

from llm_server import Reply, ScriptedChatServer

from mtrbench.cli import main
from mtrbench.judge.nuggets.prompts import ASSIGN_SYSTEM, CREATE_SYSTEM, LABEL_SYSTEM

SECRET = "sk-test-RAG-NUGGETS-7c1d2e3f"
KEY_ENV = "MTRBENCH_RAG_NUGGETS_TEST_KEY"
TURNS = 6  # --limit 1: the sample's first conversation


class Server:
    """Generation: cites the first passage. Verdicts: correct. Nuggets: the first four words of each passage; vital
    when the nugget has an even number of characters; support when the nugget's last word is in the answer."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts = {"generate": 0, "verdict": 0, "create": 0, "label": 0, "assign": 0}
        self.labels: dict[str, list[tuple[bool, str]]] = {}  # answer -> (vital, assignment) per nugget

    def __call__(self, body: dict) -> Reply:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        with self.lock:
            if system == CREATE_SYSTEM:
                self.counts["create"] += 1
                passages = re.findall(r"^\[\d+\] (.*)$", user, re.M)
                return Reply(json.dumps([" ".join(p.split()[:4]) for p in passages]))
            if system == LABEL_SYSTEM:
                self.counts["label"] += 1
                return Reply(json.dumps(["vital" if len(n) % 2 == 0 else "okay" for n in numbered(user)]))
            if system == ASSIGN_SYSTEM:
                self.counts["assign"] += 1
                answer = re.search(r"^Answer: (.*)$", user, re.M).group(1)
                said = re.findall(r"[a-z0-9]+", answer.lower())
                nuggets = numbered(user)
                labels = [
                    "support" if re.findall(r"[a-z0-9]+", n.lower())[-1] in said else "not_support" for n in nuggets
                ]
                self.labels[answer] = [(len(n) % 2 == 0, label) for n, label in zip(nuggets, labels)]
                return Reply(json.dumps(labels))
            if "[Current question]" in user:
                self.counts["verdict"] += 1
                return Reply("Verdict: [[CORRECT]]")
            self.counts["generate"] += 1
            question = re.search(r"\nCurrent question: (.*)$", user).group(1)
            return Reply(f"On {question} the first passage answers it [1].")


def numbered(user: str) -> list[str]:
    block = user.split("Nuggets:\n", 1)[1].split("\n\n", 1)[0]
    return [re.sub(r"^\d+\. ", "", line) for line in block.splitlines()]


def rag_args(server: ScriptedChatServer, out: Path, *extra: str) -> list[str]:
    return [
        "rag", "--model", "bm25", "--output-dir", str(out), "--generator-model", "gen-m", "--generator-base-url",
        server.base_url, "--judge-model", "judge-m", "--api-key-env", KEY_ENV, "--limit", "1", "--passages", "2",
        "--measures", "", "--ragalign", "", "--yes", "--quiet", "--no-llm-cache", *extra,
    ]  # fmt: skip


def test_rag_nuggets_stage_scores_and_resumes(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, SECRET)
    out = tmp_path / "results"
    server_side = Server()
    with ScriptedChatServer(server_side) as server:
        assert main(rag_args(server, out, "--nuggets")) == 0, capsys.readouterr().err
        # one relevant passage a turn in the sample: one creation window, one label batch, one assignment batch
        assert server_side.counts == {
            "generate": TURNS,
            "verdict": TURNS,
            "create": TURNS,
            "label": TURNS,
            "assign": TURNS,
        }
        assert "nuggets over 6 answers" in capsys.readouterr().out
        report = json.loads(next(out.rglob("*.rag.json")).read_text())
        rows = []
        for labels in server_side.labels.values():
            vital = [a for v, a in labels if v]
            every = [a for _, a in labels]
            strict_vital = sum(a == "support" for a in vital) / len(vital) if vital else 0.0
            rows.append((strict_vital, sum(a == "support" for a in every) / len(every)))
        assert len(rows) == TURNS
        scores = report["nuggets"]["scores"]
        assert scores["n"] == TURNS
        # no partial_support in these replies: each strict score equals its non-strict one
        assert scores["strict_vital"] == scores["vital"] == sum(r[0] for r in rows) / TURNS
        assert abs(scores["strict_all"] - sum(r[1] for r in rows) / TURNS) < 1e-12
        assert scores["all"] == scores["strict_all"]
        assert set(report["nuggets"]["by_topic_switch"]) == {"before_switch", "after_switch"}
        assert report["complete"] is True
        before = dict(server_side.counts)
        assert main(rag_args(server, out, "--nuggets")) == 0
        assert server_side.counts == before  # a rerun asks nothing
        assert main(rag_args(server, out)) == 0
    assert "nuggets" not in json.loads(next(out.rglob("*.rag.json")).read_text())  # absent without --nuggets


def test_rag_nuggets_needs_the_judge(tmp_path, capsys):
    args = ["rag", "--model", "bm25", "--generator-model", "g", "--judge", "none", "--nuggets", "--yes"]
    assert main([*args, "--output-dir", str(tmp_path)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "--nuggets needs the judge model" in err[0]
