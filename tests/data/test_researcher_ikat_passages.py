"""The passage files the iKAT organisers distribute (``{"doc_id", "passage_id", "passage_text"}``, as in
github.com/irlabamsterdam/iKAT 2023/data/*_psg_text.jsonl) are read as ``--corpus``: the passage is
``DOC_ID:PASSAGE_ID``, the id iKAT's qrels and runs name it by."""

from __future__ import annotations

import gzip
import json

from mtrbench.data import load_task
from mtrbench.data.loaders.passages import read_passages
from tests.data.ikat_fixtures import turn_ids

DOC = "clueweb22-en0000-32-08101"
RECORDS = [
    {"doc_id": DOC, "passage_id": "4", "passage_text": "\nEmail is more efficient than social media.\n"},
    {"doc_id": DOC, "passage_id": "5", "passage_text": "Email marketing isn't dead."},
    {"doc_id": "clueweb22-en0000-34-11055", "passage_id": 1, "passage_text": "The RAV4 Hybrid outsold the Prius."},
]


def _write(path, records):
    text = "".join(json.dumps(r) + "\n" for r in records)
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def test_the_ikat_layout_names_each_passage_doc_colon_passage(tmp_path):
    corpus = read_passages(_write(tmp_path / "ikat_passages.jsonl.gz", RECORDS))
    assert corpus.ids == [f"{DOC}:4", f"{DOC}:5", "clueweb22-en0000-34-11055:1"]
    assert corpus.texts == [r["passage_text"] for r in RECORDS]
    assert corpus.titles == ["", "", ""]


def test_a_record_naming_its_passage_whole_keeps_that_name(tmp_path):
    record = {"_id": "p-17", "doc_id": DOC, "passage_id": "4", "contents": "text"}
    assert read_passages(_write(tmp_path / "c.jsonl", [record])).ids == ["p-17"]


def test_ikat_qrels_meet_the_passages_of_an_ikat_corpus(tmp_path):
    qid = turn_ids(2023)[0]
    (tmp_path / "2023-qrels.all-turns.txt").write_text(f"{qid} Q0 {DOC}:5 3\n{qid} Q0 {DOC}:4 0\n")
    corpus = _write(tmp_path / "passages.jsonl", RECORDS)
    task = load_task("ikat-2023", data_dir=tmp_path, corpus_path=corpus)
    assert task.corpus.ids == [f"{DOC}:4", f"{DOC}:5", "clueweb22-en0000-34-11055:1"]
    [query] = [q for q in task.queries if q.qid == qid]
    assert query.qrels == {f"{DOC}:5": 3, f"{DOC}:4": 0}
