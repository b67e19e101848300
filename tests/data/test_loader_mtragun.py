"""MTRAG-UN loader on the released files (tests/data/mtragun, see its README): counts, the query each
generation task becomes, and an evaluation under MTRAG's official protocol over a stand-in corpus."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from mtrbench.data import load_task
from mtrbench.data.model import ASSISTANT, USER
from mtrbench.infra.errors import MtrbenchError

DATA = Path(__file__).parent / "mtragun"
REFERENCE = DATA / "mtragun-human" / "generation_tasks" / "reference.jsonl.gz"
# MTRAG-UN's README and the released files: 507 generation tasks, qrels for 332 questions
TASKS = {"govt": 157, "clapnq": 142, "cloud": 131, "fiqa": 77}
JUDGED = {"clapnq": 83, "cloud": 86, "fiqa": 58, "govt": 105}


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    with gzip.open(REFERENCE, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@pytest.fixture(scope="module")
def tasks():
    return {d: load_task(f"mtragun-{d}", data_dir=DATA, require_corpus=False) for d in TASKS}


def test_counts_of_the_released_files(tasks):
    assert {d: len(t.queries) for d, t in tasks.items()} == TASKS
    assert sum(TASKS.values()) == 507
    assert {d: len(t.qrels()) for d, t in tasks.items()} == JUDGED
    for d, t in tasks.items():
        assert t.warnings == {"queries without qrels (kept, excluded from metrics)": TASKS[d] - JUDGED[d]}


def test_a_task_becomes_its_last_user_turn_with_the_history_before_it(tasks, rows):
    row = next(r for r in rows if r["Collection"] == "fiqa")  # the first record: turn 7 of a fiqa conversation
    query = next(q for q in tasks["fiqa"].queries if q.qid == row["task_id"])
    assert query.conversation_id == row["conversation_id"] and query.turn_id == int(row["turn"]) == 7
    assert query.query == row["input"][-1]["text"].strip()
    assert [(m.role, m.content) for m in query.history] == [
        (USER if t["speaker"] == "user" else ASSISTANT, t["text"].strip()) for t in row["input"][:-1]
    ]
    assert len(query.history) == 12 and query.answers == (row["targets"][0]["text"],)
    assert query.meta["answerability"] == ["ANSWERABLE"] and query.meta["question_type"] == ["Opinion", "Summarization"]
    assert query.meta["collection"] == "mt-rag-fiqa-beir-elser-512-100-20240501"
    assert set(query.qrels) == {c["document_id"] for c in row["contexts"]}  # its reference passages are its qrels


def test_unanswerable_turns_are_kept_without_qrels(tasks):
    labels = [q.meta["answerability"][0] for q in tasks["govt"].queries if not q.qrels]
    assert set(labels) == {"UNANSWERABLE", "UNDERSPECIFIED"} and len(labels) == 157 - 105


def test_cloud_reads_the_ibmcloud_collection(tasks, rows):
    assert {q.qid for q in tasks["cloud"].queries} == {r["task_id"] for r in rows if r["Collection"] == "ibmcloud"}


def test_missing_files_name_what_to_pass(tmp_path):
    with pytest.raises(MtrbenchError, match=r"no generation_tasks/reference.jsonl"):
        load_task("mtragun-govt", data_dir=tmp_path, require_corpus=False)
    with pytest.raises(MtrbenchError, match=r"needs the MTRAG passage-level corpus govt.jsonl.zip"):
        load_task("mtragun-govt", data_dir=DATA)


def test_bad_record_names_file_and_record(tmp_path, rows):
    folder = tmp_path / "mtragun-human"
    shutil.copytree(DATA / "mtragun-human" / "retrieval_tasks", folder / "retrieval_tasks")
    broken = [dict(r) for r in rows[:3]]  # fiqa, then two ibmcloud tasks
    broken[0]["input"] = broken[0]["input"][:-1]  # ends on the agent's turn
    (folder / "generation_tasks").mkdir()
    (folder / "generation_tasks" / "reference.jsonl").write_text("".join(json.dumps(r) + "\n" for r in broken))
    with pytest.raises(MtrbenchError, match=r"reference.jsonl record 0 .*last 'input' turn must be the user's"):
        load_task("mtragun-fiqa", data_dir=tmp_path, require_corpus=False)
