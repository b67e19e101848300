"""mtrbench.formats: the one qrels reader (TREC and BEIR layouts), the run reader, BEIR folders, atomic writes."""

from __future__ import annotations

import datasets
import pytest

from mtrbench.formats.beir import BeirFolder, qrels_from_rows
from mtrbench.formats.lines import at_line, at_record
from mtrbench.formats.qrels import BEIR, TREC, format_qrels, parse_qrels, read_qrels
from mtrbench.formats.run import format_run, ranked, read_run
from mtrbench.infra.atomic import atomic_write_bytes
from mtrbench.infra.errors import MtrbenchError


def test_trec_qrels_any_white_space_blank_lines_and_float_grades():
    lines = ["q1 0 d1 2\n", "\n", "q1\tQ0  d2   0\n", "q2 0 d9 1.0\n", "   \n"]
    assert parse_qrels(lines, at_line("x.qrels")) == {"q1": {"d1": 2, "d2": 0}, "q2": {"d9": 1}}


def test_trec_qrels_duplicates_keep_the_later_grade_and_are_reported():
    heard = []
    qrels = parse_qrels(
        ["q1 0 d1 1", "q1 0 d2 1", "q1 0 d1 3"],
        at_line("x"),
        TREC,
        on_duplicate=lambda qid, doc: heard.append((qid, doc)),
    )
    assert qrels == {"q1": {"d1": 3, "d2": 1}}
    assert heard == [("q1", "d1")]


@pytest.mark.parametrize(
    "line, message",
    [
        ("q1 0 d1", r"^x\.qrels:2: a qrels line needs 'qid iter docid grade', got 3 fields$"),
        ("q1", r"^x\.qrels:2: a qrels line needs 'qid iter docid grade', got 1 field$"),
        ("q1 0 d1 yes", r"^x\.qrels:2 \(q1\): grade 'yes' is not an integer$"),
        ("q1 0 d1 1.5", r"^x\.qrels:2 \(q1\): grade '1\.5' is not an integer$"),
        ("q1 0 d1 nan", r"^x\.qrels:2 \(q1\): grade 'nan' is not an integer$"),
    ],
)
def test_trec_qrels_errors_name_file_and_line(line, message):
    with pytest.raises(MtrbenchError, match=message):
        parse_qrels(["q0 0 d0 1", line], at_line("x.qrels"))


def test_the_caller_chooses_how_lines_are_numbered():
    with pytest.raises(MtrbenchError, match=r"^x\.qrels record 1: a qrels line needs"):
        parse_qrels(["q0 0 d0 1", "q1 0 d1"], at_record("x.qrels"))


def test_beir_qrels_tab_separated_after_the_header():
    lines = ["query-id\tcorpus-id\tscore\n", "q1\tdoc one\t1\n", "q1\td2\t0\r\n", "\n", "q2\td3\t2\n"]
    assert parse_qrels(lines, at_line("t.tsv"), BEIR) == {"q1": {"doc one": 1, "d2": 0}, "q2": {"d3": 2}}


@pytest.mark.parametrize(
    "lines, message",
    [
        (["q1\td1\t1"], r"^t\.tsv:1: qrels need the header 'query-id<TAB>corpus-id<TAB>score'$"),
        ([], r"^t\.tsv:1: qrels need the header"),
        (
            ["query-id\tcorpus-id\tscore", "q1\td1"],
            r"^t\.tsv:2: a qrels line needs 'query-id<TAB>corpus-id<TAB>score', got 2 fields$",
        ),
        (
            ["query-id\tcorpus-id\tscore", "\td1\t1"],
            r"^t\.tsv:2: a qrels line needs 'query-id<TAB>corpus-id<TAB>score', got an empty query-id$",
        ),
        (["query-id\tcorpus-id\tscore", "q1\td1\tyes"], r"^t\.tsv:2 \(q1\): score 'yes' is not an integer$"),
    ],
)
def test_beir_qrels_errors(lines, message):
    with pytest.raises(MtrbenchError, match=message):
        parse_qrels(lines, at_line("t.tsv"), BEIR)


def test_read_qrels_takes_the_layout_from_the_first_line(tmp_path):
    beir = tmp_path / "test.tsv"
    beir.write_text("\nquery-id\tcorpus-id\tscore\nq1\td1\t1\n")
    trec = tmp_path / "qrels.txt"
    trec.write_text("q1 0 d1 1\nq1 0 d2 2\n")
    assert read_qrels(beir) == {"q1": {"d1": 1}}
    assert read_qrels(trec) == {"q1": {"d1": 1, "d2": 2}}
    with pytest.raises(MtrbenchError, match=r"qrels\.txt:1: qrels need the header"):
        read_qrels(trec, BEIR)
    with pytest.raises(MtrbenchError, match=r"^qrels file .*missing\.txt does not exist$"):
        read_qrels(tmp_path / "missing.txt")


def test_format_qrels_in_either_layout():
    qrels = {"q1": {"d1": 2, "d2": 0}, "q2": {"d3": 1}}
    assert format_qrels(qrels) == "q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 1\n"
    assert format_qrels(qrels, BEIR) == "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\nq2\td3\t1\n"
    assert format_qrels({}) == ""
    assert parse_qrels(format_qrels(qrels, BEIR).splitlines(), at_line("x"), BEIR) == qrels


def test_run_ranked_order_and_text():
    run = {"q1": {"a": 0.5, "c": 0.5, "b": 0.9}, "q2": {"z": 0.25}}
    assert ranked(run["q1"]) == [("b", 0.9), ("c", 0.5), ("a", 0.5)]
    assert format_run(run, "t") == "q1 Q0 b 1 0.9 t\nq1 Q0 c 2 0.5 t\nq1 Q0 a 3 0.5 t\nq2 Q0 z 1 0.25 t\n"
    assert format_run({}, "t") == ""


def test_read_run_and_its_errors(tmp_path):
    path = tmp_path / "a.run"
    path.write_text("q1 Q0 d1 1 1.5 tag\n\nq1 Q0 d2 7 -2 tag\nq2 Q0 d1 1 3e-1 tag\n")
    assert read_run(path) == {"q1": {"d1": 1.5, "d2": -2.0}, "q2": {"d1": 0.3}}
    path.write_text("q1 Q0 d1 1 1.5 tag\nq1 Q0 d1 2 1.0 tag\n")
    with pytest.raises(MtrbenchError, match=r"a\.run:2: document 'd1' appears twice for query 'q1'$"):
        read_run(path)
    path.write_bytes(b"q1 Q0 d1 1 \xff tag\n")
    with pytest.raises(MtrbenchError, match=r"a\.run: not UTF-8 text"):
        read_run(path)
    with pytest.raises(MtrbenchError, match=r"^run file .*nothing\.run does not exist$"):
        read_run(tmp_path / "nothing.run")


def test_beir_folder_paths_and_what_is_missing(tmp_path):
    plain, cqa = BeirFolder(tmp_path), BeirFolder(tmp_path, prefix="android")
    assert plain.queries == tmp_path / "queries.jsonl" and plain.qrels("dev") == tmp_path / "qrels" / "dev.tsv"
    assert cqa.queries == tmp_path / "android-queries.jsonl"
    assert cqa.qrels("test") == tmp_path / "android-qrels" / "test.tsv"
    assert cqa.corpus == tmp_path / "corpus.jsonl" and cqa.conversations == tmp_path / "conversations.jsonl"
    with pytest.raises(MtrbenchError, match=r"missing corpus\.jsonl$"):
        plain.check("test")
    (tmp_path / "qrels").mkdir()
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/dev.tsv", "qrels/train.tsv"):
        (tmp_path / name).write_text("")
    plain.check("dev")
    with pytest.raises(MtrbenchError, match=r"missing test\.tsv \(qrels splits here: \['dev', 'train'\]\)$"):
        plain.check("test")


def test_qrels_from_hub_rows():
    rows = datasets.Dataset.from_dict(
        {"query-id": ["q1", "q1", "q2"], "corpus-id": ["d1", "d2", "d3"], "score": [1, 0, 2]}
    )
    assert qrels_from_rows(rows, "hub") == {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}}
    floats = datasets.Dataset.from_dict({"query-id": [7], "corpus-id": [8], "score": [2.0]})
    assert qrels_from_rows(floats, "hub") == {"7": {"8": 2}}
    with pytest.raises(MtrbenchError, match=r"^hub: qrels need columns .* missing \['score'\]$"):
        qrels_from_rows(datasets.Dataset.from_dict({"query-id": ["q"], "corpus-id": ["d"]}), "hub")
    gap = datasets.Dataset.from_dict({"query-id": ["q1", None], "corpus-id": ["d1", "d2"], "score": [1, 1]})
    with pytest.raises(MtrbenchError, match=r"^hub record 1: incomplete qrels row$"):
        qrels_from_rows(gap, "hub")


def test_atomic_write_bytes_replaces_whole_files(tmp_path):
    target = tmp_path / "deep" / "figure.png"
    atomic_write_bytes(target, b"first")
    atomic_write_bytes(target, b"second")
    assert target.read_bytes() == b"second"
    assert [p.name for p in target.parent.iterdir()] == ["figure.png"]
