"""`judge nuggets GENERATIONS --task T` against a scripted chat-completions server on 127.0.0.1.

The scripted model reads each prompt as a model would (which step, which passages, which answer and nuggets) and
decides its reply from that alone by simple rules, remembering what it said; every expected number below comes from
those remembered replies and the nuggetizer formulas written out here, never from mtrbench's output."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedChatServer

from mtrbench.cli import main
from mtrbench.data import load_task, resolve_card
from mtrbench.judge.nuggets.create import CreationSettings, create_nuggets
from mtrbench.judge.nuggets.prompts import ASSIGN_SYSTEM, CREATE_SYSTEM, LABEL_SYSTEM, SUPPORT_SYSTEM
from mtrbench.judge.nuggets.steps import StepAsker
from mtrbench.judge.nuggets.turns import Turn
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.stage import StageLog, StageOptions

KEY_ENV = "MTRBENCH_NUGGET_TEST_KEY"
SECRET = "sk-nugget-test-0123456789abcdef"
GENERATIONS = Path(__file__).resolve().parents[1] / "data" / "generations-sample.jsonl"
QIDS = ["geo-01_1", "geo-01_2", "geo-01_3", "geo-01_4"]


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


class ScriptedNuggetModel:
    """Creation: the list so far plus, per passage, the passage's first five words as one nugget. Labels: vital when
    the nugget has an even number of characters. Assignment: support when the nugget's last word is in the answer,
    partial_support when only its first word is, else not_support. Citation support: full when every word of the
    sentence longer than six letters is in the passage, partial when one is, else none."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.asked: dict[str, int] = {"create": 0, "label": 0, "assign": 0, "support": 0}
        self.assigned: dict[tuple[str, str], str] = {}  # (answer, nugget) -> label
        self.supported: dict[tuple[str, str], str] = {}  # (sentence, passage) -> support
        self.fail_when = None  # (step, content) -> a Reply to send instead

    def __call__(self, body: dict) -> Reply:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        step = {CREATE_SYSTEM: "create", LABEL_SYSTEM: "label", ASSIGN_SYSTEM: "assign", SUPPORT_SYSTEM: "support"}[
            system
        ]
        with self.lock:
            self.asked[step] += 1
            if self.fail_when is not None and (reply := self.fail_when(step, user)) is not None:
                return reply
            return Reply(getattr(self, step)(user))

    def create(self, user: str) -> str:
        so_far = json.loads(re.search(r"Nuggets so far \(\d+\): (\[.*\])", user).group(1))
        passages = re.findall(r"^\[\d+\] (.*)$", user, re.M)
        return json.dumps(so_far + [" ".join(p.split()[:5]) for p in passages])

    def label(self, user: str) -> str:
        return json.dumps(["vital" if len(n) % 2 == 0 else "okay" for n in numbered(user)])

    def assign(self, user: str) -> str:
        answer = re.search(r"^Answer: (.*)$", user, re.M).group(1)
        labels = [assignment_rule(answer, n) for n in numbered(user)]
        for nugget, label in zip(numbered(user), labels):
            self.assigned[(answer, nugget)] = label
        return json.dumps(labels)

    def support(self, user: str) -> str:
        sentence = re.search(r"^Sentence: (.*)$", user, re.M).group(1)
        passage = re.search(r"^Cited passage: (.*)$", user, re.M).group(1)
        long = [w for w in words(sentence) if len(w) > 6]
        found = sum(w in words(passage) for w in long)
        label = "full_support" if long and found == len(long) else "partial_support" if found else "no_support"
        self.supported[(sentence, passage)] = label
        return label


def numbered(user: str) -> list[str]:
    block = user.split("Nuggets:\n", 1)[1].split("\n\n", 1)[0]
    return [re.sub(r"^\d+\. ", "", line) for line in block.splitlines()]


def assignment_rule(answer: str, nugget: str) -> str:
    said, nugget_words = words(answer), words(nugget)
    if nugget_words and nugget_words[-1] in said:
        return "support"
    return "partial_support" if nugget_words and nugget_words[0] in said else "not_support"


def write_judges(path: Path, base_url: str, **extra) -> Path:
    judge = {"name": "j", "model": "nugget-m", "base_url": base_url, "api_key_env": KEY_ENV}
    judge |= {"parse_retries": 0, "max_retries": 0, "concurrency": 2, "timeout_s": 20, **extra}
    path.write_text(json.dumps({"judges": [judge]}))
    return path


def two_runs(tmp_path: Path) -> list[Path]:
    """run-a: the sample generations; run-b: the same answers with the first sentence only."""
    rows = [json.loads(line) for line in GENERATIONS.read_text().splitlines()]
    a = tmp_path / "run-a.jsonl"
    a.write_text("".join(json.dumps(r) + "\n" for r in rows))
    b = tmp_path / "run-b.jsonl"
    b.write_text("".join(json.dumps({**r, "answer": r["answer"].split(". ")[0] + "."}) + "\n" for r in rows))
    return [a, b]


def nugget_args(files, judges: Path, out: Path, *extra: str) -> list[str]:
    return [
        "judge", "nuggets", *map(str, files), "--task", "mtrbench-sample", "--judges", str(judges),
        "--output-dir", str(out), "--no-llm-cache", "--yes", "--quiet", *extra,
    ]  # fmt: skip


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def expected_scores(labelled: list[list[tuple[bool, str]]]) -> dict[str, float]:
    """nuggetizer's four scores averaged over answers; ``labelled``: per answer, (vital, assignment) per nugget."""
    credit = {"support": 1.0, "partial_support": 0.5}
    rows = []
    for nuggets in labelled:
        vital = [a for v, a in nuggets if v]
        every = [a for _, a in nuggets]
        rows.append(
            [
                sum(a == "support" for a in vital) / len(vital) if vital else 0.0,
                sum(credit.get(a, 0.0) for a in vital) / len(vital) if vital else 0.0,
                sum(a == "support" for a in every) / len(every) if every else 0.0,
                sum(credit.get(a, 0.0) for a in every) / len(every) if every else 0.0,
            ]
        )
    return dict(zip(["strict_vital", "vital", "strict_all", "all"], [sum(c) / len(rows) for c in zip(*rows)]))


def test_created_nuggets_assignments_and_scores(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, SECRET)
    model = ScriptedNuggetModel()
    out = tmp_path / "out"
    with ScriptedChatServer(model) as server:
        code = main(nugget_args(two_runs(tmp_path), write_judges(tmp_path / "j.json", server.base_url), out))
    assert code == 0, capsys.readouterr().err
    # one creation window (one relevant passage a turn in the sample), one label batch a turn, one assignment
    # batch per answer (fewer than 10 nuggets)
    assert model.asked == {"create": 4, "label": 4, "assign": 8, "support": 0}
    created = read_jsonl(out / "nuggets.jsonl")
    assert [r["qid"] for r in created] == QIDS
    for record in created:
        assert set(record) == {"query", "qid", "nuggets", "mtrbench"}
        assert record["mtrbench"] == {
            "creator_model": "nugget-m", "max_nuggets": 30, "passage_batch": 10, "label_batch": 10,
            "relevance_level": 1,
        }  # fmt: skip
        for nugget in record["nuggets"]:
            assert nugget["importance"] == ("vital" if len(nugget["text"]) % 2 == 0 else "okay")
    doc = json.loads((out / "scores.json").read_text())
    for run in ("run-a", "run-b"):
        records = read_jsonl(out / "assignments" / f"{run}.jsonl")
        assert [r["qid"] for r in records] == QIDS and {r["run_id"] for r in records} == {run}
        labelled = []
        for record in records:
            assert list(record) == ["query", "qid", "answer_text", "response_length", "run_id", "nuggets"]
            for n in record["nuggets"]:
                assert n["assignment"] == model.assigned[(record["answer_text"], n["text"])]
            labelled.append([(n["importance"] == "vital", n["assignment"]) for n in record["nuggets"]])
        scores = doc["runs"][run]["scores"]
        assert scores["n"] == 4
        assert {k: scores[k] for k in ("strict_vital", "vital", "strict_all", "all")} == pytest.approx(
            expected_scores(labelled)
        )
        assert doc["runs"][run]["by_topic_switch"]["after_switch"]["n"] == 1  # geo-01_4 follows the switch
    assert "run-a" in capsys.readouterr().out


def test_creation_revises_the_list_over_passage_batches_and_keeps_at_most_max(tmp_path, monkeypatch):
    """Five passages in batches of two: three rounds, each prompt showing the list the previous round left; the
    list is cut at max_nuggets (4) as nuggetizer cuts it."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    model = ScriptedNuggetModel()
    prompts: list[str] = []
    original = model.create
    model.create = lambda user: prompts.append(user) or original(user)
    passages = tuple(f"passage {i} says fact number {i} plainly" for i in range(5))
    turn = Turn("t1", "what facts?", (), passages, tuple(f"d{i}" for i in range(5)))
    settings = CreationSettings(max_nuggets=4, passage_batch=2, label_batch=3)
    with ScriptedChatServer(model) as server:
        judge = JudgeConfig(name="j", model="m", base_url=server.base_url, api_key_env=KEY_ENV, max_retries=0)
        asker = StepAsker(StageLog(tmp_path / "log.jsonl"), StageOptions(yes=True, show_progress=False))
        made = create_nuggets([turn], judge, settings, asker)["t1"]
    firsts = [" ".join(p.split()[:5]) for p in passages]
    assert [re.search(r"Nuggets so far \((\d+)\)", p).group(1) for p in prompts] == ["0", "2", "4"]
    assert made.texts() == firsts[:4]  # round 3 returned 5: cut to 4
    assert model.asked["label"] == 2  # 4 nuggets in batches of 3
    assert [n.importance for n in made.nuggets] == ["vital" if len(t) % 2 == 0 else "okay" for t in firsts[:4]]


def given_nuggets(tmp_path: Path, qids=QIDS) -> Path:
    rows = [
        {"query": q, "qid": q, "nuggets": [{"text": f"the {w} fact", "importance": "vital" if i % 2 else "okay"}
                                           for i, w in enumerate(["glacier", "depth", "river", "bridge", "metres"])]}
        for q in qids
    ]  # fmt: skip
    path = tmp_path / "given.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_given_nuggets_kill_and_resume_asks_only_the_missing(tmp_path, monkeypatch, capsys):
    """Five nuggets in batches of two: three assignment requests per answer, 24 for two runs. A log cut short
    after ten records (and half a line, as a kill leaves it) makes the rerun ask the other 14 only."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    model = ScriptedNuggetModel()
    out = tmp_path / "out"
    files = two_runs(tmp_path)
    with ScriptedChatServer(model) as server:
        args = nugget_args(files, write_judges(tmp_path / "j.json", server.base_url), out)
        args += ["--nuggets", str(given_nuggets(tmp_path)), "--assign-batch", "2"]
        assert main(args) == 0
        assert model.asked == {"create": 0, "label": 0, "assign": 24, "support": 0}
        assert not (out / "nuggets.jsonl").exists()
        first = json.loads((out / "scores.json").read_text())["runs"]
        log = out / "nuggets_log.jsonl"
        lines = log.read_text().splitlines(keepends=True)
        log.write_text("".join(lines[:10]) + lines[10][: len(lines[10]) // 2])
        model.asked["assign"] = 0
        assert main(args) == 0
        assert model.asked["assign"] == 14
        model.asked["assign"] = 0
        assert main(args) == 0 and model.asked["assign"] == 0  # all answered now
    assert json.loads((out / "scores.json").read_text())["runs"] == first


def test_failing_replies_are_counted_and_set_the_exit_code(tmp_path, monkeypatch, capsys):
    """Every assignment of run-b's answers fails (HTTP 500): 4 of 8 assignment batches, 50% > 25%: exit 1 with one
    line; the failed nuggets are written "failed" (not supported). A rerun on a healthy server asks those 4 only."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    model = ScriptedNuggetModel()

    def fail(step, user):
        answer = re.search(r"^Answer: (.*)$", user, re.M).group(1) if step == "assign" else ""
        one_sentence = step == "assign" and ". " not in answer  # run-b's answers are their first sentence only
        return Reply(status=500, body={"error": "scripted outage"}) if one_sentence else None

    model.fail_when = fail
    out = tmp_path / "out"
    with ScriptedChatServer(model) as server:
        args = nugget_args(two_runs(tmp_path), write_judges(tmp_path / "j.json", server.base_url), out)
        args += ["--nuggets", str(given_nuggets(tmp_path))]
        assert main(args) == 1
        errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "failed on 4 of 8 assignment batches" in errors[0]
        records = read_jsonl(out / "assignments" / "run-b.jsonl")
        assert {n["assignment"] for r in records for n in r["nuggets"]} == {"failed"}
        assert json.loads((out / "scores.json").read_text())["runs"]["run-b"]["scores"]["all"] == 0.0
        model.fail_when = None
        model.asked["assign"] = 0
        assert main(args) == 0
        assert model.asked["assign"] == 4


def test_malformed_label_replies_are_failures(tmp_path, monkeypatch, capsys):
    """A label reply with the wrong count is malformed (no re-ask with parse_retries 0): that turn's nuggets are
    written "failed" (not vital); 1 of 4 label batches failed, within --max-failure-rate 0.25."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    model = ScriptedNuggetModel()

    def malformed(step, user):  # two labels for geo-01_2's one nugget
        asked = step == "label" and re.search(r"^Question: how deep does it get", user, re.M)
        return Reply('["vital", "okay"]') if asked else None

    model.fail_when = malformed
    out = tmp_path / "out"
    with ScriptedChatServer(model) as server:
        args = nugget_args([GENERATIONS], write_judges(tmp_path / "j.json", server.base_url), out)
        assert main(args) == 0
        assert main([*args, "--max-failure-rate", "0.2"]) == 1
    err = capsys.readouterr().err
    assert "failed on 1 of 4 label batches" in err and "labels for" in err
    created = {r["qid"]: r for r in read_jsonl(out / "nuggets.jsonl")}
    assert {n["importance"] for n in created["geo-01_2"]["nuggets"]} == {"failed"}


def test_citation_support_precision_and_recall(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    model = ScriptedNuggetModel()
    out = tmp_path / "out"
    with ScriptedChatServer(model) as server:
        args = nugget_args([GENERATIONS], write_judges(tmp_path / "j.json", server.base_url), out)
        assert main([*args, "--nuggets", str(given_nuggets(tmp_path)), "--citations"]) == 0
    support = json.loads((out / "scores.json").read_text())["runs"]["generations-sample"]["citation_support"]
    weight = {"full_support": 1.0, "partial_support": 0.5, "no_support": 0.0}
    # geo-01_2: "Its maximum depth is 212 metres [1][2]." and "The mean depth is 87 metres. [3]" (no third passage)
    answer = support["per_answer"]["geo-01_2"]
    assert answer["sentences"] == 2 and answer["pairs"] == 3
    labels = [(x["sentence"], x["citation"], x["support"]) for x in answer["labels"]]
    assert labels[2] == (1, 3, "no_support")  # a label naming no shown passage: no support, never asked
    asked = [weight[s] for _, _, s in labels]
    assert answer["precision"] == pytest.approx(sum(asked) / 3)
    assert answer["recall"] == pytest.approx((max(asked[0], asked[1]) + 0.0) / 2)
    # by hand from the four answers: geo-01_1 cites [1][2] then [2]; geo-01_2 [1][2] (and [3], no passage);
    # geo-01_3 [1] twice, in two sentences; geo-01_4 [1, 2]
    assert model.asked["support"] == 3 + 2 + 2 + 2
    shape = {q: (a["sentences"], a["pairs"]) for q, a in support["per_answer"].items()}
    assert shape == {"geo-01_1": (3, 3), "geo-01_2": (2, 3), "geo-01_3": (2, 2), "geo-01_4": (2, 2)}
    task = load_task(resolve_card("mtrbench-sample"))
    shown = {
        d: task.corpus.document_text(task.corpus.position(d))
        for d in ("geo-varnholm-dimensions", "geo-varnholm-formation")
    }
    said = [model.supported[("Its maximum depth is 212 metres.", shown[d])] for d in shown]
    assert [s for _, _, s in labels[:2]] == said
    per_answer = support["per_answer"]
    precisions = [a["precision"] for a in per_answer.values() if a["precision"] is not None]
    assert support["precision"] == pytest.approx(sum(precisions) / len(precisions))
    assert support["recall"] == pytest.approx(sum(a["recall"] for a in per_answer.values()) / len(per_answer))


def test_dry_run_sends_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, SECRET)
    model = ScriptedNuggetModel()
    with ScriptedChatServer(model) as server:
        args = nugget_args([GENERATIONS], write_judges(tmp_path / "j.json", server.base_url), tmp_path / "o")
        assert main([*args, "--dry-run"]) == 0
        assert server.request_count == 0
    printed = capsys.readouterr()
    assert "Revise the list of nuggets" in printed.out + printed.err


def test_bad_inputs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, SECRET)
    judges = write_judges(tmp_path / "j.json", "http://127.0.0.1:9/v1")
    other = given_nuggets(tmp_path, ["geo-02_1"])
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text(json.dumps({"qid": "nope_1", "answer": "x"}) + "\n")
    cases = [
        (nugget_args([GENERATIONS], judges, tmp_path / "o", "--nuggets", str(other)), "no nuggets for turn 'geo-01_1'"),
        (nugget_args([wrong], judges, tmp_path / "o"), "turn 'nope_1' is not a turn of task"),
        (
            nugget_args([GENERATIONS], judges, tmp_path / "o", "--assign-batch", "0"),
            "--assign-batch must be at least 1",
        ),
        (["judge", "nuggets", str(GENERATIONS)], "need --task"),
    ]
    for args, message in cases:
        assert main(args) == 2, args
        lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], lines


def test_creation_killed_half_way_resumes_and_assignments_score_the_same_offline(tmp_path, monkeypatch, capsys):
    """A log cut after two creation records: the rerun asks the other two turns' creation only, and the label and
    assignment steps only what their prompts (now known) lack. The written assignment file, scored by
    `--assignments` with no LLM, gives the same scores."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    model = ScriptedNuggetModel()
    out = tmp_path / "out"
    with ScriptedChatServer(model) as server:
        args = nugget_args([GENERATIONS], write_judges(tmp_path / "j.json", server.base_url), out)
        assert main(args) == 0
        log = out / "nuggets_log.jsonl"
        lines = log.read_text().splitlines(keepends=True)
        assert [json.loads(line)["stage"] for line in lines[:4]] == ["nuggets.create"] * 4
        log.write_text("".join(lines[:2]) + lines[2][:40])
        model.asked = dict.fromkeys(model.asked, 0)
        assert main(args) == 0
        assert model.asked == {"create": 2, "label": 4, "assign": 4, "support": 0}
        model.asked = dict.fromkeys(model.asked, 0)
        assert main(args) == 0 and model.asked == dict.fromkeys(model.asked, 0)
    scored = json.loads((out / "scores.json").read_text())["runs"]["generations-sample"]
    offline = tmp_path / "offline.json"
    assignments = out / "assignments" / "generations-sample.jsonl"
    assert main(["judge", "nuggets", "--assignments", str(assignments), "--task", "mtrbench-sample",
                 "--nuggets", str(out / "nuggets.jsonl"), "--output", str(offline)]) == 0  # fmt: skip
    again = json.loads(offline.read_text())["runs"]["generations-sample"]
    assert again["scores"] == scored["scores"] and again["per_answer"] == scored["per_answer"]
