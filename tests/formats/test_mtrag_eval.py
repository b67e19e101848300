"""MTRAGEval files: reading the released records, writing them back, and the official format check.

The expected problem counts were produced by running IBM's own ``scripts/evaluation/format_checker.py``
(mt-rag-benchmark commit cc5b1d4) on the same constructed file: 23 issues in generation_taskb, 24 in rag_taskc,
20 in retrieval_taska, and the empty-contexts warning on line 4.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtrbench.formats.mtrag_eval import check_predictions, read_tasks, task_from_record, write_tasks
from mtrbench.infra.errors import DataError

DATA = Path(__file__).resolve().parents[1] / "data" / "mtrag_eval"


def test_released_records_are_read_with_their_labels_and_round_trip(tmp_path):
    tasks = read_tasks(DATA / "responses-4.jsonl")
    assert [t.task_id for t in tasks] == [f"dd6b6ffd177f2b311abe676261279d2f::{i}" for i in range(1, 5)]
    assert [t.answerability for t in tasks] == ["UNANSWERABLE", "ANSWERABLE", "ANSWERABLE", "ANSWERABLE"]
    assert [len(t.input) for t in tasks] == [1, 3, 5, 7] and [len(t.contexts) for t in tasks] == [0, 3, 4, 2]
    assert tasks[0].collection == "mt-rag-clapnq-elser-512-100-20240503"
    assert tasks[1].prediction.startswith("Yes, the Arizona Cardinals played one road game outside the US")
    assert tasks[1].conversation_text.splitlines()[0] == "user: where do the arizona cardinals play this week"
    write_tasks(tmp_path / "out.jsonl", tasks)
    again = read_tasks(tmp_path / "out.jsonl")
    assert again == tasks
    originals = [json.loads(line) for line in (DATA / "responses-4.jsonl").read_text().splitlines()]
    for original, written in zip(originals, (json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines())):
        original["Collection"] = original.pop("collection")  # the one field written in the checker's spelling
        assert written == original


def test_answerability_is_read_from_each_place_the_repository_keeps_it():
    base = {"task_id": "t::1", "input": [{"speaker": "user", "text": "q"}]}
    assert task_from_record({**base, "answerability": ["PARTIAL"]}, "x").answerability == "PARTIAL"
    in_turn = {
        "task_id": "t::1",
        "input": [{"speaker": "user", "text": "q", "enrichments": {"answerability": ["UNANSWERABLE"]}}],
    }
    assert task_from_record(in_turn, "x").answerability == "UNANSWERABLE"
    assert (
        task_from_record({**base, "enrichments": {"answerability": ["CONVERSATIONAL"]}}, "x").answerability
        == "CONVERSATIONAL"
    )
    assert task_from_record(base, "x").answerability is None


def test_a_malformed_record_names_file_and_line(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"task_id": "a::1", "input": []}\n{"task_id": "a::2", "predictions": [{"txt": 1}]}\n')
    with pytest.raises(DataError, match=r"p.jsonl:2: predictions\[0\]"):
        read_tasks(path)


@pytest.fixture(scope="module")
def constructed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("check")
    good = {
        "task_id": "a::1",
        "Collection": "c",
        "input": [{"speaker": "user", "text": "q"}],
        "contexts": [{"document_id": "d1", "score": 1.5, "text": "t"}],
        "predictions": [{"text": "ans"}],
    }
    records = [
        good,
        {
            "task_id": 1,
            "input": "q",
            "contexts": [{"document_id": 5}, "x"],
            "predictions": [{"txt": "a"}, {"text": 3}, "p"],
        },
        {
            "task_id": "a::3",
            "Collection": "c",
            "input": [],
            "contexts": [{"document_id": "d", "score": "high"}] * 11,
            "predictions": [{"text": "a"}],
        },
        {"task_id": "a::4", "Collection": "c", "input": [], "contexts": [], "predictions": []},
    ]
    pred = folder / "pred.jsonl"
    pred.write_text("".join(json.dumps(r) + "\n" for r in records) + "{not json\n")
    inputs = folder / "inp.jsonl"
    inputs.write_text("".join(json.dumps({"task_id": t}) + "\n" for t in ("a::1", "a::3", "a::4", "a::9")))
    return pred, inputs


@pytest.mark.parametrize("mode,count", [("generation_taskb", 23), ("rag_taskc", 24), ("retrieval_taska", 20)])
def test_format_check_finds_what_the_official_checker_finds(constructed, mode, count):
    pred, inputs = constructed
    report = check_predictions(pred, mode, inputs)
    assert len(report.problems) == count
    assert report.warnings == [f"{pred}: 'contexts' is empty on 1 line(s): [4]"]
    assert all(p.startswith(str(pred)) for p in report.problems)
    assert sum(f"{pred}:3: contexts[" in p and "score" in p for p in report.problems) == 11
    assert any("task_id 'a::9'" in p and "missing" in p for p in report.problems)
    assert any(p.startswith(f"{pred}:5: not JSON") for p in report.problems)
    assert not any(f"{pred}:1:" in p for p in report.problems)  # the good record


def test_released_predictions_pass_the_generation_check():
    report = check_predictions(DATA / "responses-4.jsonl", "generation_taskb")
    assert report.problems == []
