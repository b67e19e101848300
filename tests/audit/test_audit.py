"""`mtrbench audit` (MTR-EVAL) end to end against a scripted chat-completions server on 127.0.0.1.

The scripted judge reads each prompt the way a model would (which dimension, which turn, which
documents in which slot), decides its reply from that alone, and remembers what it meant; the
expected numbers below are computed from those intentions, never from the audit's own output.
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
from collections import defaultdict
from pathlib import Path
from statistics import fmean

import pytest
from cli_run import run_cli
from llm_server import Reply, ScriptedChatServer
from scipy.stats import pearsonr

from mtrbench.cli import main
from mtrbench.data import load_task

SECRET = "sk-test-AUDIT-0123456789abcdef"
KEY_ENV = "MTRBENCH_AUDIT_TEST_KEY"
MARKERS = {
    "### Answerability scale": "alignment",
    "most likely source of the answer": "completeness",
    "### Faithfulness scale": "faithfulness",
    "### Answer quality scale": "quality",
}


def _stable(*parts: str) -> int:
    return int(hashlib.sha256("|".join(parts).encode()).hexdigest(), 16)


class ScriptedJudge:
    """Answers audit prompts from their content; records what each reply meant."""

    def __init__(
        self,
        task,
        malformed: dict[tuple[str, str, str], str] | None = None,
        gold_picks: dict[str, set[str]] | None = None,
    ) -> None:
        self.by_text = {
            f"{t}\n{x}" if t else x: d for d, t, x in zip(task.corpus.ids, task.corpus.titles, task.corpus.texts)
        }
        self.queries = {}
        for q in task.queries:
            block = "\n".join(f"{'User' if m.role == 'user' else 'Assistant'}: {m.content}" for m in q.history)
            self.queries[(block, q.query)] = q
        self.malformed = malformed or {}  # (model, dimension, instance) -> reply text
        self.gold_picks = gold_picks or {}  # model -> qids on which the judge picks the gold document
        self.ratings: dict[tuple[str, str, str], float] = {}  # well-formed intended scores
        self.failed: set[tuple[str, str, str]] = set()
        self.picks: dict[tuple[str, str], dict] = {}  # (model, qid) -> shown doc ids, picked slot, picked doc
        self.lock = threading.Lock()

    def identify(self, content: str):
        dimension = next(d for marker, d in MARKERS.items() if marker in content)
        instance = content.split("### Now", 1)[1]
        block = re.search(r"Conversation so far:\n(.*?)\n\nDocument", instance, re.S).group(1)
        question = re.search(r"\n\nQuestion: (.*?)\n\n(?:Response: |Reply with)", instance, re.S).group(1)
        query = self.queries[("" if block.startswith("(none") else block, question)]
        return dimension, instance, query

    def __call__(self, body: dict) -> Reply:
        model = body["model"]
        dimension, instance, q = self.identify(body["messages"][-1]["content"])
        with self.lock:
            if dimension == "completeness":
                return Reply(self._pick(model, instance, q))
            if dimension == "alignment":
                text = re.search(r"\nDocument:\n(.*?)\n\nQuestion: ", instance, re.S).group(1)
                instance_id = f"{q.qid}::{self.by_text[text]}"
            else:
                instance_id = q.qid
            key = (model, dimension, instance_id)
            if key in self.malformed:
                self.failed.add(key)
                return Reply(self.malformed[key])
            rating = 1 + _stable(*key) % 5
            self.ratings[key] = float(rating)
            forms = [
                f"Justification: it fits, see document 2 of 3.\nRating: {rating}",
                f"The evidence is adequate.\n\n**Rating:** [[{rating}]]",
                f"Rating: {rating}",
            ]
            return Reply(forms[_stable(model, instance_id, "form") % len(forms)])

    def _pick(self, model: str, instance: str, q) -> str:
        block = instance.split("Documents:\n", 1)[1].split("\n\nQuestion: ", 1)[0]
        slots = re.split(r"(?:^|\n\n)\[\d+\] ", block)[1:]
        shown = [self.by_text[s] for s in slots]
        gold = {d for d, g in q.qrels.items() if g > 0}
        on_gold = q.qid in self.gold_picks.get(model, set())
        slot = next(i for i, d in enumerate(shown, 1) if (d in gold) == on_gold)
        self.picks[(model, q.qid)] = {"shown": shown, "slot": slot, "doc": shown[slot - 1], "on_gold": on_gold}
        # a justification citing other slots first: the verdict is the labelled one at the end
        return f"Documents [1] and [{len(shown)}] were compared.\nDocument ID: [{slot}]"


def write_judges(path: Path, base_url: str, models: list[str]) -> Path:
    judges = [
        {
            "name": m,
            "model": m,
            "base_url": base_url,
            "api_key_env": KEY_ENV,
            "parse_retries": 1,
            "max_retries": 0,
            "concurrency": 4,
            "timeout_s": 20,
        }
        for m in models
    ]
    path.write_text(json.dumps({"judges": judges}), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def mini_task(native_mini):
    return load_task(str(native_mini))


def test_audit_end_to_end_matches_scripted_judges(native_mini, mini_task, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, SECRET)
    malformed = {
        ("judge-b", "alignment", "c1_2::varn-fish"): "The document seems to fit the question well.",
        ("judge-b", "quality", "c1_3"): "Rating: 9",  # out of the 1-5 scale
        ("judge-a", "faithfulness", "c1_4"): '{"score": "high"}',
    }
    judge = ScriptedJudge(mini_task, malformed, gold_picks={"judge-a": {"c1_1", "c1_3", "c1_4"}, "judge-b": {"c1_2"}})
    human_path = tmp_path / "human.jsonl"
    human_alignment = {
        "c1_1::varn-depth": 5,
        "c1_2::varn-fish": 4,
        "c1_3::orrin-design": 2,
        "c1_4::orrin-open": 3,
        "c1_4::orrin-design": 1,
    }
    rows = [{"instance_id": i, "dimension": "alignment", "score": s} for i, s in human_alignment.items()]
    rows.append({"instance_id": "c1_4::orrin-open", "dimension": "alignment", "score": 5, "annotator": "b"})
    human_path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    human_alignment["c1_4::orrin-open"] = 4.0  # two annotators, averaged
    out = tmp_path / "audit"
    with ScriptedChatServer(judge) as server:
        judges = write_judges(tmp_path / "judges.json", server.base_url, ["judge-a", "judge-b"])
        code = main(
            [
                "audit",
                str(native_mini),
                "--judges",
                str(judges),
                "--negatives",
                "2",
                "--output-dir",
                str(out),
                "--no-llm-cache",
                "--yes",
                "--quiet",
                "--human-scores",
                str(human_path),
            ]
        )
        printed = capsys.readouterr()
        assert code == 0, printed.err
        headers = list(server.headers)
    summary = json.loads((out / "summary.json").read_text())
    aggregates = summary["aggregates"]

    # 4 audited turns (c1_5 has no gold); alignment has one item per gold document (c1_4 has two)
    assert summary["counts"]["audited_queries"] == 4
    assert summary["counts"]["items"] == {"alignment": 5, "completeness": 4, "faithfulness": 4, "quality": 4}
    for model in ("judge-a", "judge-b"):
        for dimension in ("alignment", "faithfulness", "quality"):
            values = [v for (m, d, _), v in judge.ratings.items() if (m, d) == (model, dimension)]
            failed = sum(1 for (m, d, _) in judge.failed if (m, d) == (model, dimension))
            stats = aggregates[dimension][model]
            assert stats["n"] == len(values) and stats["failures"] == failed and stats["missing"] == 0
            assert stats["mean"] == pytest.approx(fmean(values))
        picks = [p for (m, _), p in judge.picks.items() if m == model]
        assert aggregates["completeness"][model]["n"] == len(picks) == 4
        assert aggregates["completeness"][model]["mean"] == pytest.approx(sum(p["on_gold"] for p in picks) / 4)
    assert (
        aggregates["completeness"]["judge-a"]["mean"] == 0.75 and aggregates["completeness"]["judge-b"]["mean"] == 0.25
    )
    # malformed replies: failures, asked 1 + parse_retries times, and kept out of the means
    assert aggregates["alignment"]["judge-b"]["failures"] == 1 and aggregates["quality"]["judge-b"]["failures"] == 1
    assert aggregates["faithfulness"]["judge-a"]["failures"] == 1

    # ensemble = per-instance mean over the judges that answered
    per_instance = defaultdict(list)
    for (_m, d, i), v in judge.ratings.items():
        if d == "quality":
            per_instance[i].append(v)
    assert aggregates["quality"]["ensemble"]["mean"] == pytest.approx(fmean(fmean(v) for v in per_instance.values()))

    # log: one record per item and judge, raw replies kept, failures marked with a reason
    log = read_jsonl(out / "log.jsonl")
    assert len(log) == 17 * 2
    failures = [r for r in log if not r["ok"]]
    assert {(r["judge"], r["dimension"], r["instance_id"]) for r in failures} == set(malformed)
    for r in failures:
        assert (
            r["score"] is None
            and r["error"]
            and r["reply"] == malformed[(r["judge"], r["dimension"], r["instance_id"])]
        )
        assert r["attempts"] == 2
    assert all(r["prompt_hash"] and r["model"] == r["judge"] for r in log)

    # completeness: recorded permutation reproduces the shown order; holes = scripted non-gold picks
    instances = {(r["dimension"], r["instance_id"]): r for r in read_jsonl(out / "instances.jsonl")}
    for (_model, qid), pick in judge.picks.items():
        inst = instances[("completeness", qid)]
        assert inst["candidates"] == pick["shown"]
        negatives = [d for d in inst["candidates"] if d != inst["gold_doc"]]
        assert sorted(inst["permutation"]) == list(range(len(inst["candidates"])))
        assert inst["permutation"].index(0) + 1 == inst["gold_position"]  # pool[0] is the gold document
        assert pick["shown"][inst["gold_position"] - 1] == inst["gold_doc"]
        qrels = next(q.qrels for q in mini_task.queries if q.qid == qid)
        assert qrels.get(inst["gold_doc"], 0) > 0 and all(qrels.get(d, 0) == 0 for d in negatives)
    expected_holes = {(qid, p["doc"], m) for (m, qid), p in judge.picks.items() if not p["on_gold"]}
    holes = read_jsonl(out / "hole_candidates.jsonl")
    assert {(h["qid"], h["doc_id"], h["judge"]) for h in holes} == expected_holes
    qrels_lines = (out / "hole_candidates.qrels").read_text().split("\n")[:-1]
    assert sorted(qrels_lines) == sorted({f"{q} 0 {d} 1" for q, d, _ in expected_holes})

    # Pearson r with the human file, per judge, equals scipy on the scripted ratings
    for model in ("judge-a", "judge-b"):
        common = [i for i in human_alignment if (model, "alignment", i) in judge.ratings]
        expected = pearsonr(
            [judge.ratings[(model, "alignment", i)] for i in common], [human_alignment[i] for i in common]
        )
        got = summary["correlation_with_humans"]["alignment"][model]
        assert got["n"] == len(common)
        assert got["pearson"] == pytest.approx(expected.statistic) and got["p_value"] == pytest.approx(expected.pvalue)

    # the key was sent to the server, and appears in no output file nor on the terminal
    assert any(SECRET in value for h in headers for name, value in h.items() if name.lower() == "authorization")
    for path in out.iterdir():
        assert SECRET not in path.read_text(encoding="utf-8"), path.name
    assert SECRET not in printed.out + printed.err
    assert "completeness = share of picks" in printed.out


def test_rerun_asks_nothing_and_without_yes_refuses(native_mini, mini_task, tmp_path, capsys):
    judge = ScriptedJudge(mini_task)
    out = tmp_path / "audit"
    base = [
        "audit",
        str(native_mini),
        "--dimensions",
        "alignment,quality",
        "--llm-model",
        "m",
        "--negatives",
        "2",
        "--output-dir",
        str(out),
        "--no-llm-cache",
        "--quiet",
    ]
    with ScriptedChatServer(judge) as server:
        base += ["--llm-base-url", server.base_url]
        assert main([*base, "--dry-run"]) == 0
        assert "alignment|c1_1::varn-depth" in capsys.readouterr().out
        assert server.request_count == 0 and not out.exists()
        assert main(base) == 2  # pytest's stdin is no terminal: the cost needs --yes
        assert "--yes" in capsys.readouterr().err and server.request_count == 0
        assert main([*base, "--yes"]) == 0
        assert server.request_count == 9  # 5 alignment + 4 quality
        assert main(base) == 0  # everything is in the log: nothing to confirm, nothing sent
        assert server.request_count == 9
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["aggregates"]) == {"alignment", "quality"}
    assert summary["aggregates"]["alignment"]["m"]["n"] == 5


def test_negatives_from_a_run_file(native_mini, mini_task, tmp_path):
    run = tmp_path / "run.trec"
    ranking = {
        "c1_3": ["orrin-design", "varn-fish", "orrin-open", "varn-depth"],
        "c1_4": ["orrin-design", "orrin-open", "varn-depth", "varn-fish"],
    }
    run.write_text(
        "".join(f"{q} Q0 {d} {r} {10 - r} t\n" for q, docs in ranking.items() for r, d in enumerate(docs, 1))
    )
    judge = ScriptedJudge(mini_task, gold_picks={"m": {"c1_3", "c1_4"}})
    out = tmp_path / "audit"
    with ScriptedChatServer(judge) as server:
        assert (
            main(
                [
                    "audit",
                    str(native_mini),
                    "--dimensions",
                    "completeness",
                    "--negatives",
                    "2",
                    "--negatives-run",
                    str(run),
                    "--llm-model",
                    "m",
                    "--llm-base-url",
                    server.base_url,
                    "--output-dir",
                    str(out),
                    "--no-llm-cache",
                    "--yes",
                    "--quiet",
                    "--seed",
                    "3",
                ]
            )
            == 0
        )
    instances = {r["instance_id"]: r for r in read_jsonl(out / "instances.jsonl")}
    assert set(instances) == {"c1_3", "c1_4"}  # c1_1 and c1_2 are not in the run: no negatives, skipped
    # c1_3: the top two non-gold; orrin-open counts as a negative there (it is gold only for c1_4)
    # c1_4: orrin-design (grade 1) is judged relevant, so never a negative; gold = the grade-2 document
    assert instances["c1_4"]["gold_doc"] == "orrin-open"
    pools = {"c1_3": ["orrin-design", "varn-fish", "orrin-open"], "c1_4": ["orrin-open", "varn-depth", "varn-fish"]}
    for qid, pool in pools.items():  # pool = gold, then the negatives in run order; shown order via the permutation
        assert [pool[p] for p in instances[qid]["permutation"]] == instances[qid]["candidates"]
        assert judge.picks[("m", qid)]["shown"] == instances[qid]["candidates"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["aggregates"]["completeness"]["m"]["mean"] == 1.0
    assert summary["notes"]["completeness: no hard negative found (instance skipped)"] == 2


def test_limit_is_a_seeded_prefix_stable_sample():
    from mtrbench.audit.plan import select_queries

    task = load_task("mtrbench-sample")
    small, _ = select_queries(task.queries, 1, 5, seed=0)
    large, _ = select_queries(task.queries, 1, 20, seed=0)
    again, _ = select_queries(task.queries, 1, 5, seed=0)
    other, _ = select_queries(task.queries, 1, 5, seed=1)
    ids = lambda qs: [q.qid for q in qs]  # noqa: E731
    assert ids(small) == ids(again) and set(ids(small)) < set(ids(large)) and ids(small) != ids(other)
    order = [q.qid for q in task.queries]
    assert ids(large) == sorted(ids(large), key=order.index)  # audited in task order


def test_human_scores_wide_csv_and_errors(tmp_path):
    from mtrbench.audit.human import read_human_scores
    from mtrbench.infra.errors import MtrbenchError

    path = tmp_path / "human.csv"
    path.write_text("instance_id,faithfulness,quality,annotator\nc1_1,5,4,a\nc1_1,4,,b\nc1_2,2,3,a\n")
    assert read_human_scores(path) == {
        "faithfulness": {"c1_1": 4.5, "c1_2": 2.0},
        "quality": {"c1_1": 4.0, "c1_2": 3.0},
    }
    path.write_text("instance_id,quality\nc1_1,good\n")
    with pytest.raises(MtrbenchError, match="human.csv line 2: score 'good'"):
        read_human_scores(path)
    bad = tmp_path / "human.jsonl"
    bad.write_text('{"instance_id": "x", "dimension": "fluency", "score": 3}\n')
    with pytest.raises(MtrbenchError, match="line 1: unknown dimension 'fluency'"):
        read_human_scores(bad)


@pytest.mark.slow
def test_resume_after_kill_asks_only_what_the_log_lacks(native_mini, mini_task, tmp_path, monkeypatch):
    from mtrbench.audit.plan import prompt_hash

    out = tmp_path / "audit"
    env = {**os.environ, KEY_ENV: SECRET}
    holder: dict = {}
    kill_at = 7

    def killing(body: dict) -> Reply:
        holder["n"] = holder.get("n", 0) + 1
        if holder["n"] == kill_at:
            os.kill(holder["proc"].pid, signal.SIGKILL)
        return Reply("Document ID: [1]" if "most likely source" in body["messages"][-1]["content"] else "Rating: 4")

    def command(base_url: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "mtrbench.cli",
            "audit",
            str(native_mini),
            "--llm-model",
            "m",
            "--llm-base-url",
            base_url,
            "--api-key-env",
            KEY_ENV,
            "--negatives",
            "2",
            "--concurrency",
            "1",
            "--output-dir",
            str(out),
            "--no-llm-cache",
            "--yes",
            "--quiet",
        ]

    with ScriptedChatServer(killing) as server:
        holder["proc"] = subprocess.Popen(
            command(server.base_url), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        _, err = holder["proc"].communicate(timeout=120)
        assert holder["proc"].returncode == -signal.SIGKILL, err
    planned = {r["prompt_hash"] for r in read_jsonl(out / "instances.jsonl")}
    answered = {r["prompt_hash"] for r in read_jsonl(out / "log.jsonl") if r["ok"]}
    assert len(planned) == 17 and 0 < len(answered) < kill_at <= len(planned)

    with ScriptedChatServer(
        lambda body: Reply(
            "Document ID: [1]" if "most likely source" in body["messages"][-1]["content"] else "Rating: 4"
        )
    ) as server:
        monkeypatch.setenv(KEY_ENV, SECRET)
        proc = run_cli(*command(server.base_url)[3:])  # the rerun needs no process of its own
        assert proc.returncode == 0, proc.stderr
        asked = [prompt_hash(body["messages"]) for body in server.requests]
    assert sorted(asked) == sorted(planned - answered)  # each missing item once, nothing already in the log
    summary = json.loads((out / "summary.json").read_text())
    assert sum(s["m"]["n"] for s in summary["aggregates"].values()) == 17
    assert summary["aggregates"]["alignment"]["m"]["mean"] == 4.0
    for path in out.iterdir():
        assert SECRET not in path.read_text(encoding="utf-8"), path.name


def test_task_without_answers_skips_answer_dimensions_with_a_note(native_mini, tmp_path, capsys):
    folder = tmp_path / "no-answers"
    (folder / "conversations").mkdir(parents=True)
    for name in ("corpus.jsonl", "README.md"):  # the README's configs map the files
        (folder / name).write_text((native_mini / name).read_text())
    rows = [json.loads(line) for line in (native_mini / "conversations/test.jsonl").read_text().splitlines()]
    for row in rows:
        row["messages"] = [m for m in row["messages"] if m["role"] == "user"]
    (folder / "conversations/test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert (
        main(
            [
                "audit",
                str(folder),
                "--llm-model",
                "m",
                "--llm-base-url",
                "http://127.0.0.1:9/v1",
                "--negatives",
                "2",
                "--dry-run",
                "--quiet",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "dry run: 9 requests" in out  # 5 alignment + 4 completeness
    assert "faithfulness: not run (no audited query has a reference answer)" in out
    assert "quality: not run" in out


def test_missing_key_for_a_remote_judge_stops_before_anything_is_asked(native_mini, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MTRBENCH_AUDIT_NO_SUCH_KEY", raising=False)
    code = main(
        [
            "audit",
            str(native_mini),
            "--dimensions",
            "alignment",
            "--llm-model",
            "m",
            "--llm-base-url",
            "https://judge.example.invalid/v1",
            "--api-key-env",
            "MTRBENCH_AUDIT_NO_SUCH_KEY",
            "--output-dir",
            str(tmp_path / "audit"),
            "--no-llm-cache",
            "--yes",
            "--quiet",
        ]
    )
    assert code == 2
    assert "MTRBENCH_AUDIT_NO_SUCH_KEY" in capsys.readouterr().err
    assert not (tmp_path / "audit" / "log.jsonl").exists()


def _hold_lock_in_another_process(lock: Path) -> subprocess.Popen:
    code = (
        "import sys\nfrom mtrbench.infra.locking import held_lock\n"
        f"with held_lock({str(lock)!r}, purpose='audit log'):\n"
        "    print('held', flush=True)\n    sys.stdin.readline()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_audit_on_a_held_log_stops_before_asking_anything(native_mini, mini_task, tmp_path, capsys):
    import socket

    out = tmp_path / "audit"
    lock = out / "log.jsonl.lock"
    with ScriptedChatServer(ScriptedJudge(mini_task)) as server:
        args = [
            "audit",
            str(native_mini),
            "--dimensions",
            "alignment",
            "--llm-model",
            "m",
            "--llm-base-url",
            server.base_url,
            "--output-dir",
            str(out),
            "--no-llm-cache",
            "--yes",
            "--quiet",
        ]
        holder = _hold_lock_in_another_process(lock)
        try:
            assert main(args) == 2
            err = capsys.readouterr().err
            assert server.request_count == 0 and not (out / "log.jsonl").exists()
            assert lock.exists() and json.loads(lock.read_text())["pid"] == holder.pid  # the holder's, untouched
        finally:
            holder.stdin.write("\n")
            holder.stdin.flush()
            assert holder.wait(30) == 0
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: the audit log ") and "Traceback" not in err
        assert f"pid {holder.pid} on host {socket.gethostname()}" in lines[0] and str(lock) in lines[0]

        # A lock left by a run that was killed (its pid is gone) is taken over with a warning.
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        lock.write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "started": "2026-01-01T00:00:00Z"}))
        assert main(args) == 0
        err = capsys.readouterr().err
        assert server.request_count == 5  # the 5 alignment items
    assert f"warning: {lock}: taking over the audit log" in err and f"pid {dead.pid} " in err
    assert not lock.exists()  # released on the way out
    assert len(read_jsonl(out / "log.jsonl")) == 5


def test_credentials_in_the_base_url_reach_no_file_and_no_output(native_mini, mini_task, tmp_path, capsys):
    """A judge behind a Basic-auth proxy whose errors and replies echo the Authorization header back."""
    import base64

    user, password = "auditor", "Pr0xy-pass-98412"
    encoded = base64.b64encode(f"{user}:{password}".encode()).decode()
    scripted = ScriptedJudge(mini_task)

    def echoing(body: dict, headers: dict) -> Reply:
        sent = next(v for k, v in headers.items() if k.lower() == "authorization")
        echo = f"you sent Authorization: {sent}, that is {base64.b64decode(sent.split()[-1]).decode()}"
        content = body["messages"][-1]["content"]
        if "### Answer quality scale" in content:
            return Reply(f"forbidden. {echo}", status=403)
        if "### Faithfulness scale" in content:
            return Reply(f"No rating from me. {echo}")  # unparseable: logged as a failed reply
        return scripted(body)

    out = tmp_path / "audit"
    with ScriptedChatServer(echoing, with_headers=True) as server:
        url = server.base_url.replace("http://", f"http://{user}:{password}@")
        code = main(
            [
                "audit",
                str(native_mini),
                "--llm-model",
                "m",
                "--llm-base-url",
                url,
                "--negatives",
                "2",
                "--output-dir",
                str(out),
                "--llm-cache",
                str(out / "llm.sqlite"),
                "--yes",
                "--quiet",
            ]
        )
        printed = capsys.readouterr()
        # every quality (403) and faithfulness (unparseable) item failed: 4 + 4 of 17, over the 0.25 default
        assert code == 1 and "judge 'm' failed on 8 of 17 items" in printed.err, printed.err
        sent = {v for h in server.headers for k, v in h.items() if k.lower() == "authorization"}
    assert sent == {f"Basic {encoded}"}  # the proxy got its credentials
    summary = json.loads((out / "summary.json").read_text())
    assert summary["judges"] == [{"name": "m", "model": "m", "base_url": server.base_url}]
    records = read_jsonl(out / "log.jsonl")
    assert any(r["dimension"] == "quality" and "HTTP 403: forbidden" in r["error"] for r in records)
    assert any(r["dimension"] == "faithfulness" and "No rating from me" in (r["reply"] or "") for r in records)
    texts = {path.name: path.read_bytes().decode("latin-1") for path in out.rglob("*") if path.is_file()}
    assert {"log.jsonl", "summary.json", "llm.sqlite"} <= set(texts)
    texts.update(stdout=printed.out, stderr=printed.err)
    for place, text in texts.items():
        for secret in (password, encoded, f"{user}:{password}"):
            assert secret not in text, (place, secret)


def _earlier_layout(record: dict) -> dict:
    """A log record as audits wrote it before the stage runner: no stage, key or settings; the value as 'parsed'."""
    old = {k: v for k, v in record.items() if k not in ("stage", "key", "settings", "value")}
    return {**old, "parsed": record["value"]}


def test_a_log_of_the_earlier_layout_is_resumed(native_mini, mini_task, tmp_path):
    out = tmp_path / "audit"
    args = [
        "audit",
        str(native_mini),
        "--dimensions",
        "alignment,quality",
        "--llm-model",
        "m",
        "--output-dir",
        str(out),
    ]
    args += ["--no-llm-cache", "--yes", "--quiet"]
    with ScriptedChatServer(ScriptedJudge(mini_task)) as server:
        assert main([*args, "--llm-base-url", server.base_url]) == 0
        assert server.request_count == 9  # 5 alignment + 4 quality
    first = json.loads((out / "summary.json").read_text())["aggregates"]
    records = [_earlier_layout(r) for r in read_jsonl(out / "log.jsonl")]
    failed = next(r for r in records if r["dimension"] == "quality")
    failed.update(ok=False, parsed=None, score=None, error="timeout after 1 attempts")
    (out / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))

    with ScriptedChatServer(ScriptedJudge(mini_task)) as server:
        assert main([*args, "--llm-base-url", server.base_url]) == 0
        asked = [body["messages"] for body in server.requests]
    from mtrbench.audit.plan import prompt_hash

    assert [prompt_hash(m) for m in asked] == [failed["prompt_hash"]]  # only the failed item is asked again
    assert json.loads((out / "summary.json").read_text())["aggregates"] == first
