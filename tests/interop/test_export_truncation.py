"""`export --format beir|hf` writes query texts truncated as eval truncates them for --model, or, only when asked
with --truncate none, whole; the export records which and the command prints it."""

from __future__ import annotations

import json

import pytest

from mtrbench.cli import main
from mtrbench.data import load_task


def whole_texts(task_path) -> dict[str, str]:
    """Each query as eval's defaults serialize it (history full: "User: "/"Agent: " messages, one a line, then
    the question; a first turn is the bare question), untruncated: written out here by hand."""
    prefix = {"user": "User: ", "assistant": "Agent: "}
    return {
        q.qid: "\n".join([*(prefix[m.role] + m.content for m in q.history), "User: " + q.query])
        if q.history
        else q.query
        for q in load_task(str(task_path)).queries
    }


@pytest.mark.parametrize(
    "extra, message",
    [
        ([], "without --model it cannot truncate as `mtrbench eval` does"),
        (["--truncate", "left"], "--truncate left needs --model"),
        (["--max-length", "64", "--truncate", "none"], "--max-length needs --model"),
        (["--model", "no-such-model-xyz"], "no-such-model-xyz"),
    ],
)
@pytest.mark.parametrize("fmt", ["beir", "hf"])
def test_export_without_a_model_needs_an_explicit_truncate_none(native_mini, tmp_path, capsys, fmt, extra, message):
    out = tmp_path / "out"
    assert main(["export", str(native_mini), "--format", fmt, "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err
    assert not out.exists()  # refused before anything was written


def test_truncate_none_writes_whole_texts_and_records_it(native_mini, tmp_path, capsys):
    out = tmp_path / "beir"
    assert main(["export", str(native_mini), "--format", "beir", "--out", str(out), "--truncate", "none"]) == 0
    printed = capsys.readouterr()
    assert "truncate=none, untruncated, as asked" in printed.out
    assert "note: query texts written whole (--truncate none" in printed.err
    texts = {r["_id"]: r["text"] for r in map(json.loads, (out / "queries.jsonl").read_text().splitlines())}
    assert texts == whole_texts(native_mini)
    record = json.loads((out / "mtrbench-export.json").read_text())
    assert record["format"] == "beir" and record["serialization"]["truncate"] == "none"
    assert record["serialization"]["model"] is None and record["truncation"].startswith("none: texts written whole")
    sidecar = [json.loads(line) for line in (out / "conversations.jsonl").read_text().splitlines()]
    assert {s["serialization"]["truncate"] for s in sidecar} == {"none"}
    assert load_task(str(out)).queries  # the record file does not get in the way of reading the export back


def test_hf_export_records_whole_texts_in_its_card(native_mini, tmp_path):
    out = tmp_path / "hf"
    assert main(["export", str(native_mini), "--format", "hf", "--out", str(out), "--truncate", "none"]) == 0
    assert json.loads((out / "mtrbench-export.json").read_text())["serialization"]["truncate"] == "none"
    assert "The query texts are written whole" in (out / "README.md").read_text()


def test_with_a_model_the_record_names_it(native_mini, tmp_path):
    out = tmp_path / "beir"
    assert main(["export", str(native_mini), "--format", "beir", "--out", str(out), "--model", "bm25"]) == 0
    record = json.loads((out / "mtrbench-export.json").read_text())
    # BM25 has no token limit: eval does not truncate for it either
    assert record["serialization"]["truncate"] == "none" and record["serialization"]["model"] == "bm25"
    assert record["truncation"].startswith("none, as `mtrbench eval --model bm25`")


@pytest.mark.parametrize("protocol, prefixed", [(None, True), ("official", True), ("trec_eval", False)])
def test_mtr_export_follows_the_protocols_serialization(shared, tmp_path, capsys, protocol, prefixed):
    """MTR-BENCH's card defaults to the official MTR-SUITE protocol, whose scripts write a first turn as
    "User: q": the export writes what eval would search with (by hand: the prefix, or the bare question under
    trec_eval), and records the protocol; later turns are the same under both."""
    data = shared / "datasets/fixtures/mtr/mtr-qwen35-fp8-12turn"
    out = tmp_path / "beir"
    extra = ["--protocol", protocol] if protocol else []
    assert (
        main(
            [
                "export",
                "mtr-bench",
                "--data-dir",
                str(data),
                "--format",
                "beir",
                "--out",
                str(out),
                "--truncate",
                "none",
                *extra,
            ]
        )
        == 0
    )
    texts = {r["_id"]: r["text"] for r in map(json.loads, (out / "queries.jsonl").read_text().splitlines())}
    queries = load_task("mtr-bench", data_dir=data).queries
    first = [q for q in queries if not q.history]
    assert first and len(first) < len(queries)
    for q in first:
        assert texts[q.qid] == ("User: " + q.query if prefixed else q.query)
    later = [q for q in queries if q.history]
    assert all(texts[q.qid].endswith("\nUser: " + q.query) for q in later)
    setting = "official:mtr-suite" if prefixed else "trec_eval"
    assert json.loads((out / "mtrbench-export.json").read_text())["serialization"]["protocol"] == setting
    assert f"protocol {setting}" in capsys.readouterr().out


def test_an_unknown_protocol_is_one_error_line_before_loading(native_mini, tmp_path, capsys):
    assert (
        main(
            [
                "export",
                str(native_mini),
                "--format",
                "beir",
                "--out",
                str(tmp_path / "o"),
                "--truncate",
                "none",
                "--protocol",
                "offical",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "offical" in err
    assert (
        main(
            [
                "export",
                str(native_mini),
                "--format",
                "beir",
                "--out",
                str(tmp_path / "o"),
                "--truncate",
                "none",
                "--protocol",
                "official",
            ]
        )
        == 2
    )  # a task without an official protocol
    assert "has no official protocol" in capsys.readouterr().err
