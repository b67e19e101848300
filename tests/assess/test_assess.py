"""`mtrbench assess` (DREAM) end to end against a real chat-completions server on 127.0.0.1.

The scripted server reads each prompt to tell the pair (query, document), the speaker (Agent A/B,
pre-filter judge, adjudicator) and the debate round, and answers from SCRIPT. Every expected label,
count and request number below is derived by hand from SCRIPT and the two run files.
"""

from __future__ import annotations

import csv
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

from mtrbench.cli import main
from mtrbench.formats.qrels import read_qrels

# Query text as the judges see it (native-mini: the gold rewrite; c1_5 has none, so its conversation).
from mtrbench.formats.run import read_run
from mtrbench.infra.errors import MtrbenchError

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

# Two runs, pooled at depth 2 (rank-3 entries must stay out of the pool).
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
# Pooled top-2: 13 pairs; 5 are judged in native-mini's qrels (c1_1/varn-depth, c1_2/varn-fish,
# c1_3/orrin-design, c1_4/orrin-open, c1_4/orrin-design): 8 to assess, in this order.
PAIRS = [
    ("c1_1", "varn-fish"),
    ("c1_1", "orrin-design"),
    ("c1_2", "varn-depth"),
    ("c1_2", "orrin-open"),
    ("c1_3", "orrin-open"),
    ("c1_3", "varn-fish"),
    ("c1_4", "varn-depth"),
    ("c1_5", "varn-depth"),
]

# (Agent A, Agent B) per round; "bad" = a malformed reply (the client asks again).
SCRIPT = {
    ("c1_1", "varn-fish"): [("no", "no")],  # round-1 consensus: not relevant
    ("c1_1", "orrin-design"): [("no", "no")],
    ("c1_2", "varn-depth"): [("yes", "yes")],  # round-1 consensus: relevant
    ("c1_2", "orrin-open"): [("yes", "no"), ("yes", "yes")],  # round-2 consensus: relevant
    ("c1_3", "orrin-open"): [("yes", "no"), ("no", "no")],  # round-2 consensus: not relevant
    ("c1_3", "varn-fish"): [("yes", "no"), ("yes", "no")],  # persistent disagreement
    ("c1_4", "varn-depth"): [("yes", "no"), ("no", "yes")],  # persistent disagreement (sides swapped)
    ("c1_5", "varn-depth"): [("no", "bad-once")],  # one malformed reply, then consensus: no
}
ADJUDICATOR = {("c1_3", "varn-fish"): "yes", ("c1_4", "varn-depth"): "no"}
# Pre-filter votes of judges f1, f2, f3 (true = supported).
PREFILTER = {
    ("c1_1", "varn-fish"): (False, False, False),  # all irrelevant: discarded
    ("c1_1", "orrin-design"): (False, False, True),
}  # one says relevant: kept
ORIGINAL_LINES = [
    "c1_1 0 varn-depth 2",
    "c1_2 0 varn-fish 2",
    "c1_3 0 orrin-design 2",
    "c1_4 0 orrin-open 2",
    "c1_4 0 orrin-design 1",
]
SECRET = "sk-assess-SECRET-0123456789abcdef"


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def identify(body: dict) -> dict:
    """Who is asking about which pair in which round, read from the prompt only."""
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if "is_supported" in user:
        query, doc = _between(user, "QUERY:", "DOCUMENT:"), _between(user, "DOCUMENT:", "ANSWERS:")
        role = "prefilter"
    else:
        query, doc = _between(user, "<query>", "</query>"), _between(user, "<doc>", "</doc>")
        role = "adjudicator" if "ADJUDICATOR" in system else re.search(r"You are (Agent [AB])", system).group(1)
    qid = "c1_5" if "Current question: thanks!" in query else QUERY_OF[query]
    doc_id = next(d for snippet, d in DOC_OF.items() if snippet in doc)
    history = _between(user, "<history>", "</history>") if "<history>" in user else ""
    rounds_seen = [int(n) for n in re.findall(r"\[round (\d+)\]", history)]
    return {
        "pair": (qid, doc_id),
        "role": role,
        "round": max(rounds_seen, default=0) + 1,
        "model": body["model"],
        "history": history,
    }


def verdict(label: str, note: str) -> str:
    return json.dumps({"reference": [], "reason": f"{note} says {label}", "response": label})


class Responder:
    """Answers from SCRIPT; counts what it saw; can hold one pair's requests (to kill a run mid-way)."""

    def __init__(
        self, hold: tuple[str, str] | None = None, bad_forever: set | None = None, refuse: set | None = None
    ) -> None:
        self.seen: list[dict] = []
        self.hold = hold
        self.held = threading.Event()
        self.release = threading.Event()
        self.bad_forever = bad_forever or set()
        self.refuse = refuse or set()  # (pair, model) answered with HTTP 400
        self.bad_once_done: set = set()
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> Reply:
        who = identify(body)
        with self.lock:
            self.seen.append(who)
        pair, role, rnd = who["pair"], who["role"], who["round"]
        if pair == self.hold:
            self.held.set()
            self.release.wait(60)
        if (pair, who["model"]) in self.refuse:
            return Reply("bad request", status=400)
        if role == "prefilter":
            vote = PREFILTER.get(pair, (True, True, True))[{"f1": 0, "f2": 1, "f3": 2}[who["model"]]]
            return Reply(json.dumps({"is_supported": vote}))
        if role == "adjudicator":
            return Reply(verdict(ADJUDICATOR[pair], "adjudicator"))
        label = SCRIPT[pair][rnd - 1][0 if role == "Agent A" else 1]
        if (pair, role) in self.bad_forever:
            return Reply("I think it is relevant, mostly.")
        if label == "bad-once":
            with self.lock:
                first = (pair, role, rnd) not in self.bad_once_done
                self.bad_once_done.add((pair, role, rnd))
            if first:
                return Reply('{"reason": "cut off", "response": "maybe"}')
            label = "no"
        # the [round N] marker lets the next round's prompt be recognised by its history
        return Reply(verdict(label, f"{role} [round {rnd}]"))


def write_runs(folder: Path) -> list[str]:
    paths = []
    for name, run in (("run_a.trec", RUN_A), ("run_b.trec", RUN_B)):
        lines = [f"{q} Q0 {d} {r} {10 - r} {name}" for q, docs in run.items() for r, d in enumerate(docs, 1)]
        (folder / name).write_text("\n".join(lines) + "\n")
        paths.append(str(folder / name))
    return paths


def write_judges(folder: Path, base_url: str) -> str:
    judges = [
        {"name": n, "model": n, "base_url": base_url, "concurrency": 4} for n in ("agent", "f1", "f2", "f3", "adj")
    ]
    path = folder / "judges.json"
    path.write_text(json.dumps({"judges": judges}))
    return str(path)


def assess_args(native_mini, tmp_path, base_url, *extra, out="out"):
    return [
        "assess",
        str(native_mini),
        "--runs",
        *write_runs(tmp_path),
        "--depth",
        "2",
        "--judges",
        write_judges(tmp_path, base_url),
        "--output-dir",
        str(tmp_path / out),
        "--no-llm-cache",
        "--yes",
        "--quiet",
        *extra,
    ]


def qrels_lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip()]


def debate_requests(seen, pair=None):
    return [s for s in seen if s["role"].startswith("Agent") and (pair is None or s["pair"] == pair)]


# The outcome SCRIPT implies with R = 2 and no adjudicator (relevant grade = native-mini's top grade, 2).
EXPECTED_NEW = [
    "c1_1 0 orrin-design 0",
    "c1_1 0 varn-fish 0",
    "c1_2 0 orrin-open 2",
    "c1_2 0 varn-depth 2",
    "c1_3 0 orrin-open 0",
    "c1_5 0 varn-depth 0",
]


def test_debate_labels_escalations_and_stats(native_mini, tmp_path):
    responder = Responder()
    with ScriptedChatServer(responder) as server:
        assert main(assess_args(native_mini, tmp_path, server.base_url)) == 0
        n_requests = server.request_count
    out = tmp_path / "out"
    # Refined qrels: original judgments unchanged and first, then the settled pairs; escalated ones absent.
    # task query order; per query the original judgments first, then the new ones by doc id
    assert qrels_lines(out / "refined_qrels.trec") == [
        "c1_1 0 varn-depth 2",
        "c1_1 0 orrin-design 0",
        "c1_1 0 varn-fish 0",
        "c1_2 0 varn-fish 2",
        "c1_2 0 orrin-open 2",
        "c1_2 0 varn-depth 2",
        "c1_3 0 orrin-design 2",
        "c1_3 0 orrin-open 0",
        "c1_4 0 orrin-open 2",
        "c1_4 0 orrin-design 1",
        "c1_5 0 varn-depth 0",
    ]
    # Requests: round 1 for 8 pairs (16) + 1 retry of the malformed reply + round 2 for 4 pairs (8) = 25.
    assert n_requests == 25
    assert {s["pair"] for s in responder.seen} == set(PAIRS)
    # Round 2 prompts carry round 1's reasons and labels; round 1 prompts carry the opening stances.
    r2 = [s for s in responder.seen if s["round"] == 2]
    assert len(r2) == 8 and all("[round 1]" in s["history"] for s in r2)
    r1 = [s for s in responder.seen if s["round"] == 1]
    assert all(
        s["history"].startswith("Agent A")
        and "Yes. The passage holds" in s["history"]
        and "No. The passage does not hold" in s["history"]
        for s in r1
    )

    stats = json.loads((out / "stats.json").read_text())
    assert stats["pool"]["pooled_pairs"] == 13 and stats["pool"]["already_judged"] == 5
    assert stats["pool"]["to_assess"] == 8
    r1s, r2s = stats["debate"]["rounds"]
    assert (r1s["debated"], r1s["consensus"], r1s["consensus_relevant"], r1s["disagreement"]) == (8, 4, 1, 4)
    assert (r2s["debated"], r2s["consensus"], r2s["consensus_relevant"], r2s["disagreement"]) == (4, 2, 1, 2)
    assert stats["escalation"]["escalated"] == 2 and stats["escalation"]["awaiting_human"] == 2
    assert stats["relevant_found"] == 2 and stats["new_judgments"] == 6 and stats["failed_pairs"] == 0
    assert stats["new_relevant_per_query"] == {"c1_2": 2} and stats["queries_with_new_relevant"] == 1

    # Escalation files: both persistent disagreements, with the whole debate.
    rows = [json.loads(line) for line in (out / "escalations.jsonl").read_text().splitlines()]
    assert [(r["qid"], r["doc_id"]) for r in rows] == [("c1_3", "varn-fish"), ("c1_4", "varn-depth")]
    assert [[(d["Agent A"]["response"], d["Agent B"]["response"]) for d in r["debate"]] for r in rows] == [
        [("yes", "no"), ("yes", "no")],
        [("yes", "no"), ("no", "yes")],
    ]
    assert rows[0]["query"] == "Who designed the Orrin Suspension Bridge?"
    assert "lives only in Lake Varnholm" in rows[0]["document"] and rows[0]["answers"] == ["Hedda Lorne."]
    assert rows[1]["debate"][1]["Agent B"]["reason"] == "Agent B [round 2] says yes"
    with (out / "escalations.csv").open(newline="") as handle:
        csv_rows = list(csv.DictReader(handle))
    assert [(r["qid"], r["doc_id"]) for r in csv_rows] == [("c1_3", "varn-fish"), ("c1_4", "varn-depth")]
    assert csv_rows[1]["round1_agent_a_label"] == "yes" and csv_rows[1]["round2_agent_a_label"] == "no"
    assert csv_rows[1]["round2_agent_b_reason"] == "Agent B [round 2] says yes"
    assert all(r["human_label"] == "" for r in csv_rows)

    # The log: one debate record per pair, consensus round as scripted.
    records = [json.loads(line) for line in (out / "assessments.jsonl").read_text().splitlines()]
    rounds = {(r["qid"], r["doc_id"]): (r["status"], r["consensus_round"]) for r in records}
    assert rounds[("c1_2", "orrin-open")] == ("consensus", 2) and rounds[("c1_5", "varn-depth")] == ("consensus", 1)
    assert rounds[("c1_3", "varn-fish")] == ("disagreement", None) and len(records) == 8

    # A second run finds everything finished: no request at all, same qrels.
    with ScriptedChatServer(Responder()) as server:
        assert main(assess_args(native_mini, tmp_path, server.base_url)) == 0
        assert server.request_count == 0
    assert sorted(qrels_lines(out / "refined_qrels.trec")) == sorted(ORIGINAL_LINES + EXPECTED_NEW)

    # Humans label the escalated pairs in the CSV and feed it back: merged into the qrels, no request.
    csv_rows[0]["human_label"] = "yes"
    csv_rows[1]["human_label"] = "1"  # a grade on the task's scale
    with (tmp_path / "filled.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(csv_rows[0]))
        writer.writeheader()
        writer.writerows(csv_rows)
    # no runs and no judge: only the merge (nothing to send anywhere)
    assert (
        main(
            ["assess", str(native_mini), "--humans", str(tmp_path / "filled.csv"), "--output-dir", str(out), "--quiet"]
        )
        == 0
    )
    assert sorted(qrels_lines(out / "refined_qrels.trec")) == sorted(
        ORIGINAL_LINES + EXPECTED_NEW + ["c1_3 0 varn-fish 2", "c1_4 0 varn-depth 1"]
    )
    stats = json.loads((out / "stats.json").read_text())
    assert stats["escalation"]["human_labelled"] == 2 and stats["escalation"]["awaiting_human"] == 0
    assert stats["relevant_found"] == 4 and stats["relevant_found_by"] == {"consensus": 2, "adjudicator": 0, "human": 2}


def test_adjudicator_settles_disagreements(native_mini, tmp_path):
    responder = Responder()
    with ScriptedChatServer(responder) as server:
        assert main(assess_args(native_mini, tmp_path, server.base_url, "--adjudicator", "adj")) == 0
        assert server.request_count == 25 + 2
    adjudicated = [s for s in responder.seen if s["role"] == "adjudicator"]
    assert sorted(s["pair"] for s in adjudicated) == [("c1_3", "varn-fish"), ("c1_4", "varn-depth")]
    assert all(s["model"] == "adj" and "[round 2]" in s["history"] for s in adjudicated)
    out = tmp_path / "out"
    assert sorted(qrels_lines(out / "refined_qrels.trec")) == sorted(
        ORIGINAL_LINES + EXPECTED_NEW + ["c1_3 0 varn-fish 2", "c1_4 0 varn-depth 0"]
    )
    stats = json.loads((out / "stats.json").read_text())
    esc = stats["escalation"]
    assert (esc["escalated"], esc["adjudicated"], esc["adjudicated_relevant"], esc["awaiting_human"]) == (2, 2, 1, 0)
    assert stats["relevant_found"] == 3 and stats["relevant_found_by"]["adjudicator"] == 1
    rows = [json.loads(line) for line in (out / "escalations.jsonl").read_text().splitlines()]
    assert [r["adjudicator"]["response"] for r in rows] == ["yes", "no"]

    # Escalated earlier without an adjudicator: a later run with one sends only the two adjudications.
    with ScriptedChatServer(Responder()) as server:
        assert main(assess_args(native_mini, tmp_path, server.base_url, out="later")) == 0
    later = Responder()
    with ScriptedChatServer(later) as server:
        assert main(assess_args(native_mini, tmp_path, server.base_url, "--adjudicator", "adj", out="later")) == 0
    assert sorted((s["role"], s["pair"]) for s in later.seen) == [
        ("adjudicator", ("c1_3", "varn-fish")),
        ("adjudicator", ("c1_4", "varn-depth")),
    ]
    assert qrels_lines(tmp_path / "later" / "refined_qrels.trec") == qrels_lines(out / "refined_qrels.trec")


def test_prefilter_discards_only_when_all_three_say_irrelevant(native_mini, tmp_path):
    responder = Responder()
    with ScriptedChatServer(responder) as server:
        assert (
            main(assess_args(native_mini, tmp_path, server.base_url, "--prefilter", "--prefilter-judges", "f1,f2,f3"))
            == 0
        )
        # 8 pairs x 3 filter votes + the debates of the 7 kept pairs (25 - 2 for the discarded one)
        assert server.request_count == 24 + 23
    filter_votes = [s for s in responder.seen if s["role"] == "prefilter"]
    assert sorted(s["model"] for s in filter_votes) == sorted(["f1", "f2", "f3"] * 8)
    assert debate_requests(responder.seen, ("c1_1", "varn-fish")) == []
    assert len(debate_requests(responder.seen, ("c1_1", "orrin-design"))) == 2
    out = tmp_path / "out"
    # The discarded pair is judged not relevant (grade 0), like its consensus label without the filter.
    assert sorted(qrels_lines(out / "refined_qrels.trec")) == sorted(ORIGINAL_LINES + EXPECTED_NEW)
    stats = json.loads((out / "stats.json").read_text())
    assert stats["prefilter"] == {"judged": 8, "kept": 7, "discarded": 1, "failed": 0}
    assert stats["debate"]["rounds"][0]["debated"] == 7


def test_prefilter_judge_failure_leaves_the_pair_undecided(native_mini, tmp_path):
    # f1 and f2 say irrelevant, f3 cannot answer: not all three said irrelevant, so no discard and no debate yet
    pair = ("c1_1", "varn-fish")
    with ScriptedChatServer(Responder(refuse={(pair, "f3")})) as server:
        assert (
            main(assess_args(native_mini, tmp_path, server.base_url, "--prefilter", "--prefilter-judges", "f1,f2,f3"))
            == 0
        )
    out = tmp_path / "out"
    assert not any(line.startswith("c1_1 0 varn-fish") for line in qrels_lines(out / "refined_qrels.trec"))
    stats = json.loads((out / "stats.json").read_text())
    assert stats["prefilter"] == {"judged": 8, "kept": 7, "discarded": 0, "failed": 1} and stats["failed_pairs"] == 1
    retry = Responder()
    with ScriptedChatServer(retry) as server:
        assert (
            main(assess_args(native_mini, tmp_path, server.base_url, "--prefilter", "--prefilter-judges", "f1,f2,f3"))
            == 0
        )
    assert sorted((s["pair"], s["model"]) for s in retry.seen) == [(pair, "f1"), (pair, "f2"), (pair, "f3")]
    assert "c1_1 0 varn-fish 0" in qrels_lines(out / "refined_qrels.trec")
    assert json.loads((out / "stats.json").read_text())["prefilter"]["discarded"] == 1


def test_unparseable_agent_fails_the_pair_and_next_run_retries_it(native_mini, tmp_path):
    broken = ("c1_2", "varn-depth")
    responder = Responder(bad_forever={(broken, "Agent A")})
    with ScriptedChatServer(responder) as server:
        assert main(assess_args(native_mini, tmp_path, server.base_url)) == 0
    # 1 + parse_retries (2) attempts for Agent A; Agent B answered once; no round 2 after a failure.
    assert len([s for s in responder.seen if s["pair"] == broken and s["role"] == "Agent A"]) == 3
    out = tmp_path / "out"
    assert "c1_2 0 varn-depth 2" not in qrels_lines(out / "refined_qrels.trec")
    assert sorted(qrels_lines(out / "refined_qrels.trec")) == sorted(
        ORIGINAL_LINES + [line for line in EXPECTED_NEW if "c1_2 0 varn-depth" not in line]
    )
    stats = json.loads((out / "stats.json").read_text())
    assert stats["failed_pairs"] == 1 and stats["debate"]["failed"] == 1
    assert stats["debate"]["rounds"][0]["debated"] == 7
    failed = [json.loads(line) for line in (out / "assessments.jsonl").read_text().splitlines()]
    failed = [r for r in failed if r["status"] == "failed"]
    assert len(failed) == 1 and "unparseable" in failed[0]["error"] and failed[0]["label"] is None

    retry = Responder()
    with ScriptedChatServer(retry) as server:
        assert main(assess_args(native_mini, tmp_path, server.base_url)) == 0
    assert {s["pair"] for s in retry.seen} == {broken} and len(retry.seen) == 2
    assert sorted(qrels_lines(out / "refined_qrels.trec")) == sorted(ORIGINAL_LINES + EXPECTED_NEW)
    assert json.loads((out / "stats.json").read_text())["failed_pairs"] == 0


@pytest.mark.slow
def test_killed_run_resumes_with_requests_only_for_unfinished_pairs(native_mini, tmp_path, monkeypatch):
    held = ("c1_3", "orrin-open")  # the 5th pair: one worker, so pairs 1-4 are finished when it hangs
    first = Responder(hold=held)
    env = dict(os.environ, OPENAI_API_KEY=SECRET)
    with ScriptedChatServer(first) as server:
        args = assess_args(native_mini, tmp_path, server.base_url, "--concurrency", "1")
        proc = subprocess.Popen(
            [sys.executable, "-m", "mtrbench.cli", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert first.held.wait(60), proc.communicate(timeout=5)
            log_path = tmp_path / "out" / "assessments.jsonl"
            deadline = time.time() + 10
            while time.time() < deadline and len(log_path.read_text().splitlines()) < 4:
                time.sleep(0.05)
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        finally:
            first.release.set()
            if proc.poll() is None:
                proc.kill()
        assert server.headers and all(
            {k.lower(): v for k, v in h.items()}["authorization"] == f"Bearer {SECRET}" for h in server.headers
        )
    finished = {(r["qid"], r["doc_id"]) for r in map(json.loads, log_path.read_text().splitlines())}
    assert finished == set(PAIRS[:4])
    assert not (tmp_path / "out" / "refined_qrels.trec").exists()

    second = Responder()
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with ScriptedChatServer(second) as server:
        proc = run_cli(  # the rerun needs no process of its own
            *args[: args.index("--judges") + 1],
            write_judges(tmp_path, server.base_url),
            *args[args.index("--judges") + 2 :],
        )
        assert proc.returncode == 0, proc.stderr
        # pairs 5-8 only: 4 + 4 + 4 (two rounds each) + 3 (round 1 with one malformed retry)
        assert server.request_count == 15
    assert {s["pair"] for s in second.seen} == set(PAIRS[4:])
    out = tmp_path / "out"
    assert sorted(qrels_lines(out / "refined_qrels.trec")) == sorted(ORIGINAL_LINES + EXPECTED_NEW)
    assert json.loads((out / "stats.json").read_text())["debate"]["rounds"][0]["debated"] == 8
    # The key was sent to the server but never written anywhere.
    for path in out.iterdir():
        assert SECRET not in path.read_text(), path
    assert SECRET not in proc.stdout + proc.stderr


def test_refined_qrels_work_with_eval(native_mini, tmp_path):
    with ScriptedChatServer(Responder()) as server:
        assert main(assess_args(native_mini, tmp_path, server.base_url, "--adjudicator", "adj")) == 0
    refined = tmp_path / "out" / "refined_qrels.trec"
    results = tmp_path / "results"
    assert (
        main(
            [
                "eval",
                "--model",
                "bm25",
                "--task",
                str(native_mini),
                "--history",
                "rewrite",
                "--refined-qrels",
                str(refined),
                "--output-dir",
                str(results),
                "--quiet",
            ]
        )
        == 0
    )
    result_json = next(p for p in results.rglob("native-mini.json"))
    doc = json.loads(result_json.read_text())["mtrbench"]["refined_qrels"]
    run = read_run(next(results.rglob("*.run.trec")))
    refined_qrels = read_qrels(refined)
    evaluator = pytrec_eval.RelevanceEvaluator(refined_qrels, {"ndcg_cut.10"})
    per_query = evaluator.evaluate(run)
    positives = [q for q, docs in refined_qrels.items() if any(g > 0 for g in docs.values())]
    assert doc["queries"]["refined"] == len(positives) == 4
    # a judged query the run misses scores 0 (mtrbench's convention; pytrec_eval would drop it)
    assert doc["refined"]["ndcg_at_10"] == pytest.approx(
        sum(per_query.get(q, {}).get("ndcg_cut_10", 0.0) for q in positives) / 4
    )
    # BRIDGE Hole@10: the newly relevant pairs (c1_2/orrin-open, c1_2/varn-depth, c1_3/varn-fish) in each top-10.
    new_relevant = {("c1_2", "orrin-open"), ("c1_2", "varn-depth"), ("c1_3", "varn-fish")}
    expected = sum(sum(1 for d in run.get(q, {}) if (q, d) in new_relevant) / 10 for q in positives) / 4
    assert expected > 0
    assert doc["hole_bridge"]["hole_bridge_at_10"] == pytest.approx(expected)


def test_dry_run_sends_nothing_and_user_errors(native_mini, tmp_path, capsys):
    with ScriptedChatServer(Responder()) as server:
        assert main(assess_args(native_mini, tmp_path, server.base_url, "--dry-run")) == 0
        assert server.request_count == 0
    printed = capsys.readouterr().out
    assert "You are Agent A" in printed and "16 chat completions" in printed
    assert "8 pairs to assess; at most 32 requests" in printed
    assert not (tmp_path / "out" / "assessments.jsonl").exists()
    with ScriptedChatServer(Responder()) as server:
        args = assess_args(native_mini, tmp_path, server.base_url)
        args.remove("--yes")
        assert main(args) == 2  # no terminal to confirm the cost estimate on
        assert server.request_count == 0
    assert "pass --yes" in capsys.readouterr().err
    base = assess_args(native_mini, tmp_path, "http://127.0.0.1:9/v1")
    assert main(base + ["--adjudicator", "nobody"]) == 2
    assert "no judge named 'nobody'" in capsys.readouterr().err
    (tmp_path / "other.trec").write_text("q9 Q0 varn-depth 1 1.0 x\n")
    assert main(base[:3] + [str(tmp_path / "other.trec")] + base[5:]) == 2
    assert "none of its query ids is a query of task native-mini" in capsys.readouterr().err


def test_debate_state_machine():
    from mtrbench.assess.dream import CONSENSUS, DEBATING, DISAGREEMENT, Debate
    from mtrbench.assess.prompts import Verdict

    yes, no = Verdict(True, "r"), Verdict(False, "r")
    debate = Debate(max_rounds=2)
    assert debate.state == DEBATING and debate.next_round == 1
    assert [speaker for speaker, _ in debate.history()] == ["Agent A", "Agent B"]
    assert debate.history()[0][1].startswith("Yes.") and debate.history()[1][1].startswith("No.")
    debate.add_round(yes, no)
    assert debate.state == DEBATING and debate.next_round == 2 and debate.label is None
    assert debate.history() == [("Agent A", "Yes. r"), ("Agent B", "No. r")]
    debate.add_round(no, yes)
    assert debate.state == DISAGREEMENT and debate.next_round is None and debate.label is None
    with pytest.raises(ValueError):
        debate.add_round(yes, yes)
    one = Debate(max_rounds=1)
    one.add_round(no, no)
    assert (one.state, one.label, one.consensus_round) == (CONSENSUS, False, 1)


@pytest.mark.parametrize(
    "text,expected",
    [
        ('{"reference": ["a"], "reason": "fits", "response": "yes"}', (True, ("a",))),
        ('```json\n{"reason": "no match", "response": "No"}\n```', (False, ())),
        ('Here: {"Response": "YES", "Reason": "ok", "reference": "one sentence"}', (True, ("one sentence",))),
    ],
)
def test_parse_verdict_accepts(text, expected):
    from mtrbench.assess.prompts import parse_verdict

    v = parse_verdict(text)
    assert (v.relevant, v.reference) == expected


@pytest.mark.parametrize(
    "text",
    [
        '{"reason": "x", "response": "maybe"}',
        '{"response": "yes"}',
        "yes, relevant",
        '["yes"]',
        '{"reason": "x", "response": "yes", "reference": 3}',
    ],
)
def test_parse_verdict_rejects(text):
    from mtrbench.assess.prompts import parse_verdict

    with pytest.raises(ValueError):
        parse_verdict(text)


def test_log_survives_a_line_cut_by_a_kill(tmp_path):
    from mtrbench.assess.log import AssessmentLog

    path = tmp_path / "log.jsonl"
    path.write_text(
        '{"kind": "debate", "qid": "q", "doc_id": "d", "status": "consensus", "label": true}\n'
        '{"kind": "debate", "qid": "q", "doc_'
    )
    log = AssessmentLog(path)
    assert list(log.read()) == [("q", "d")] and sum(log.warnings.values()) == 1
    log.append({"kind": "prefilter", "qid": "q", "doc_id": "e", "status": "kept"})
    log.close()
    again = AssessmentLog(path)
    assert sorted(again.read()) == [("q", "d"), ("q", "e")]
    # a complete record that only lost its newline is kept
    path.write_text('{"kind": "human", "qid": "q", "doc_id": "f", "label": true}')
    log = AssessmentLog(path)
    log.append({"kind": "human", "qid": "q", "doc_id": "g", "label": False})
    log.close()
    assert sorted(AssessmentLog(path).read()) == [("q", "f"), ("q", "g")]
    path.write_text('{"kind": "debate", "qid": "q"}\n{"kind": "debate", "qid": "q", "doc_id": "d"}\n')
    with pytest.raises(MtrbenchError, match="log.jsonl:1"):
        AssessmentLog(path).read()


def test_human_label_file_errors_name_the_row(tmp_path):
    from mtrbench.assess.escalation import read_human_labels

    path = tmp_path / "h.csv"
    path.write_text("qid,doc_id,human_label\nq1,d1,yes\nq1,d2,\nq2,d3,perhaps\n")
    with pytest.raises(MtrbenchError, match="h.csv line 4"):
        read_human_labels(path)
    path.write_text("qid,doc_id,human_label\nq1,d1,Yes\nq1,d2,\nq2,d3,0\n")
    labels, counts = read_human_labels(path)
    assert [(h.qid, h.doc_id, h.relevant, h.grade) for h in labels] == [
        ("q1", "d1", True, None),
        ("q2", "d3", False, 0),
    ]
    assert counts["rows without a human label yet"] == 1
    path = tmp_path / "h.jsonl"
    path.write_text(
        '{"qid": "q1", "doc_id": "d1", "human_label": null}\n{"qid": "q1", "doc_id": "d2", "label": "no"}\n'
        '{"qid": "q1", "doc_id": "d3", "human_label": -1}\n'
    )
    with pytest.raises(MtrbenchError, match="h.jsonl line 3"):
        read_human_labels(path)
    path.write_text(path.read_text().splitlines()[0] + "\n" + path.read_text().splitlines()[1] + "\n")
    labels, counts = read_human_labels(path)
    assert [(h.doc_id, h.relevant) for h in labels] == [("d2", False)] and sum(counts.values()) == 1


def test_changed_rounds_or_adjudicator_redo_the_affected_steps(native_mini, tmp_path):
    """A log written with --rounds 1 is not reused as if it were a 2-round debate: every pair is debated
    again, round 1 replays from the LLM cache (so only the 4 pairs still split after round 1 send their
    round 2), and the result is exactly the 2-round outcome. A different adjudicator re-adjudicates."""

    def args(base_url, *extra):
        out = assess_args(native_mini, tmp_path, base_url, *extra)
        out[out.index("--no-llm-cache")] = "--llm-cache"
        out.insert(out.index("--llm-cache") + 1, str(tmp_path / "llm.sqlite"))
        return out

    one_round = Responder()
    with ScriptedChatServer(one_round) as server:
        assert main(args(server.base_url, "--rounds", "1")) == 0
    assert len(debate_requests(one_round.seen)) == 8 * 2 + 1  # + the malformed reply asked again
    split_after_round_1 = {
        p for p, script in SCRIPT.items() if script[0][0] != script[0][1] and "bad-once" not in script[0]
    }
    assert len(split_after_round_1) == 4

    two_rounds = Responder()
    with ScriptedChatServer(two_rounds) as server:
        assert main(args(server.base_url, "--rounds", "2")) == 0
    sent = debate_requests(two_rounds.seen)
    assert {s["round"] for s in sent} == {2} and {s["pair"] for s in sent} == split_after_round_1
    assert len(sent) == 2 * len(split_after_round_1)
    out = tmp_path / "out"
    assert sorted(qrels_lines(out / "refined_qrels.trec")) == sorted(ORIGINAL_LINES + EXPECTED_NEW)
    stats = json.loads((out / "stats.json").read_text())
    assert (
        stats["warnings"][
            "pairs debated again: logged under other agents or another --rounds "
            "(rounds both share come from the LLM cache)"
        ]
        == 8
    )
    assert stats["escalation"]["escalated"] == 2

    with ScriptedChatServer(Responder()) as server:  # same settings again: nothing to do
        assert main(args(server.base_url, "--rounds", "2")) == 0
        assert server.request_count == 0

    for adjudicator, expected_requests in (("adj", 2), ("adj", 0), ("f1", 2)):
        responder = Responder()
        with ScriptedChatServer(responder) as server:
            assert main(args(server.base_url, "--adjudicator", adjudicator)) == 0
        asked = [s for s in responder.seen if s["role"] == "adjudicator"]
        assert len(responder.seen) == len(asked) == expected_requests
        assert all(s["model"] == adjudicator for s in asked)
    records = [json.loads(line) for line in (out / "assessments.jsonl").read_text().splitlines()]
    assert [r["judge"] for r in records if r["kind"] == "adjudication"] == ["adj", "adj", "f1", "f1"]


def test_an_adjudication_belongs_to_the_debate_logged_before_it(tmp_path):
    from mtrbench.assess.log import AssessmentLog

    log = AssessmentLog(tmp_path / "log.jsonl")
    debate = {
        "kind": "debate",
        "qid": "q",
        "doc_id": "d",
        "status": "disagreement",
        "label": None,
        "max_rounds": 1,
        "agents": {"Agent A": "x", "Agent B": "x"},
        "rounds": [],
    }
    log.append(debate)
    log.append({"kind": "adjudication", "qid": "q", "doc_id": "d", "judge": "adj", "status": "ok", "label": True})
    entry = log.read()[("q", "d")]
    assert entry.adjudication is not None and not entry.needs_adjudication("adj") and entry.needs_adjudication("other")
    assert not entry.needs_debate({"max_rounds": 1}) and entry.needs_debate({"max_rounds": 2})
    log.append({**debate, "max_rounds": 2})
    log.close()
    entry = log.read()[("q", "d")]
    assert entry.adjudication is None and entry.needs_adjudication("adj") and not entry.needs_debate({"max_rounds": 2})


def test_a_dead_judge_stops_assess_with_one_line_and_the_next_run_finishes(native_mini, tmp_path, capsys):
    judges = tmp_path / "dead.json"
    with ScriptedChatServer(lambda body: Reply("down", status=503)) as server:
        judges.write_text(
            json.dumps(
                {
                    "judges": [
                        {
                            "name": "agent",
                            "model": "agent",
                            "base_url": server.base_url,
                            "max_retries": 0,
                            "max_failures_in_a_row": 3,
                            "concurrency": 1,
                        }
                    ]
                }
            )
        )
        args = assess_args(native_mini, tmp_path, server.base_url, "--concurrency", "1")
        args[args.index("--judges") + 1] = str(judges)
        assert main(args) == 2
        assert server.request_count == 3
    last = capsys.readouterr().err.strip().splitlines()[-1]  # after the cost estimate's note
    assert "3 requests in a row failed" in last and "run again to resume" in last and "Traceback" not in last
    log_path = tmp_path / "out" / "assessments.jsonl"
    logged = [json.loads(line) for line in log_path.read_text().splitlines()] if log_path.exists() else []
    assert all(r["status"] == "failed" and r["label"] is None for r in logged)  # retried by the next run

    with ScriptedChatServer(Responder()) as server:
        assert main(assess_args(native_mini, tmp_path, server.base_url)) == 0
    assert sorted(qrels_lines(tmp_path / "out" / "refined_qrels.trec")) == sorted(ORIGINAL_LINES + EXPECTED_NEW)


def test_a_second_assess_on_a_held_log_stops_before_asking_anything(native_mini, tmp_path, capsys):
    import socket

    lock = tmp_path / "out" / "assessments.jsonl.lock"
    lock.parent.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        lock.write_text(
            json.dumps({"pid": sleeper.pid, "host": socket.gethostname(), "started": "2026-01-01T00:00:00Z"})
        )
        with ScriptedChatServer(Responder()) as server:
            assert main(assess_args(native_mini, tmp_path, server.base_url)) == 2
            assert server.request_count == 0
    finally:
        sleeper.kill()
        sleeper.wait()
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"pid {sleeper.pid} on host" in errors[0] and "assessment log" in errors[0]
    assert "Traceback" not in err and not (tmp_path / "out" / "refined_qrels.trec").exists()
    assert not (tmp_path / "out" / "assessments.jsonl").exists()

    # the sleeper is gone now: its lock is stale, taken over with a warning, and the run does all the work
    with ScriptedChatServer(Responder()) as server:
        assert main(assess_args(native_mini, tmp_path, server.base_url)) == 0
        assert server.request_count > 0
    assert "taking over the assessment log" in capsys.readouterr().err and not lock.exists()
    assert sorted(qrels_lines(tmp_path / "out" / "refined_qrels.trec")) == sorted(ORIGINAL_LINES + EXPECTED_NEW)


def _earlier_layout(record: dict) -> dict:
    """A log record as assess wrote it before the stage runner: kind, pair, time and the step's own fields."""
    runner = ("stage", "key", "settings", "ok", "value", "reply", "attempts", "cached", "prompt_tokens")
    old = {k: v for k, v in record.items() if k not in (*runner, "completion_tokens", "judge", "error", "malformed")}
    if record["kind"] == "adjudication":
        old["judge"] = record["judge"]
    if record.get("error"):
        old["error"] = record["error"]
    return old


def test_a_log_of_the_earlier_layout_is_resumed(native_mini, tmp_path):
    with ScriptedChatServer(Responder()) as server:
        assert main(assess_args(native_mini, tmp_path, server.base_url, "--adjudicator", "adj")) == 0
    out = tmp_path / "out"
    qrels = qrels_lines(out / "refined_qrels.trec")
    records = [_earlier_layout(json.loads(line)) for line in (out / "assessments.jsonl").read_text().splitlines()]
    assert {r["kind"] for r in records} == {"debate", "adjudication"}
    broken = next(r for r in records if (r["qid"], r["doc_id"]) == ("c1_1", "varn-fish"))
    broken.update(status="failed", label=None, consensus_round=None, rounds=[], error="Agent A round 1: HTTP 503")
    (out / "assessments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))

    again = Responder()
    with ScriptedChatServer(again) as server:
        assert main(assess_args(native_mini, tmp_path, server.base_url, "--adjudicator", "adj")) == 0
    # only the failed debate is held again (one round: SCRIPT agrees at once); the adjudications are reused
    assert sorted((s["pair"], s["role"]) for s in again.seen) == [
        (("c1_1", "varn-fish"), "Agent A"),
        (("c1_1", "varn-fish"), "Agent B"),
    ]
    assert qrels_lines(out / "refined_qrels.trec") == qrels
