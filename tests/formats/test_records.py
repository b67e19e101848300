"""Record files given by users: JSONL and CSV, errors naming the line."""

import pytest

from mtrbench.formats.records import read_records
from mtrbench.infra.errors import MtrbenchError


def test_jsonl_and_csv_records_name_their_lines(tmp_path):
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text('{"qid": "q1"}\n\n{"qid": "q2", "label": 1}\n')
    assert read_records(jsonl) == [(f"{jsonl} line 1", {"qid": "q1"}), (f"{jsonl} line 3", {"qid": "q2", "label": 1})]
    csv_path = tmp_path / "b.csv"
    csv_path.write_text("qid,doc_id\nq1,d1\nq2,d2\n")
    assert read_records(csv_path, {"qid", "doc_id"}) == [
        (f"{csv_path} line 2", {"qid": "q1", "doc_id": "d1"}),
        (f"{csv_path} line 3", {"qid": "q2", "doc_id": "d2"}),
    ]


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("bad.jsonl", '{"qid": 1}\n{oops\n', "bad.jsonl line 2: not valid JSON"),
        ("list.jsonl", "[1, 2]\n", "list.jsonl line 1: a record must be a JSON object, got list"),
        ("cols.csv", "qid,label\nq1,1\n", "cols.csv: the CSV header lacks the column"),
    ],
)
def test_malformed_record_files(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(MtrbenchError, match=message):
        read_records(path, {"qid", "doc_id"})
    with pytest.raises(MtrbenchError, match="does not exist"):
        read_records(tmp_path / "missing.jsonl")


def test_jsonl_records_are_read_as_every_jsonl_input(tmp_path):
    """The JSONL branch is formats.lines' reader: a byte order mark is dropped, gzip is read, and bytes that
    are not UTF-8 are an error naming the file and line."""
    import gzip

    bom = tmp_path / "bom.jsonl"
    bom.write_bytes('\ufeff{"qid": "q1"}\n'.encode("utf-8"))
    assert read_records(bom) == [(f"{bom} line 1", {"qid": "q1"})]
    packed = tmp_path / "packed.jsonl.gz"
    packed.write_bytes(gzip.compress(b'\n{"qid": "q2"}\n'))
    assert read_records(packed) == [(f"{packed} line 2", {"qid": "q2"})]
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"qid": "q1"}\n{"qid": "caf\xe9"}\n')
    with pytest.raises(MtrbenchError, match="latin.jsonl: not UTF-8 text at line 2"):
        read_records(latin)
