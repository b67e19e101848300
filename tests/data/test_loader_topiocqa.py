"""TopiOCQA in mteb's format (format ``mteb-topiocqa``) on the shared fixture."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from cli_run import run_cli

from mtrbench.data import load_task
from mtrbench.infra.errors import MtrbenchError

SHARD = "validation-00000-of-00001.jsonl"


@pytest.fixture(scope="module")
def root(shared) -> Path:
    return shared / "datasets/fixtures/mteb_topiocqa"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _writable_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for folder, _, files in os.walk(dst):
        os.chmod(folder, stat.S_IRWXU)
        for name in files:
            os.chmod(Path(folder) / name, stat.S_IRUSR | stat.S_IWUSR)
    return dst


def test_matches_raw_files(root):
    corpus = _jsonl(root / "corpus" / SHARD)
    queries = _jsonl(root / "queries" / SHARD)
    qrels: dict[str, dict[str, int]] = {}
    for row in _jsonl(root / "data" / SHARD):
        qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = row["score"]

    task = load_task("topiocqa", data_dir=root)
    assert task.split == "validation" and not task.warnings
    assert task.corpus.ids == [d["_id"] for d in corpus]
    assert task.corpus.titles == [d["title"] for d in corpus]
    assert task.corpus.texts == [d["text"] for d in corpus]
    assert [q.qid for q in task.queries] == [q["_id"] for q in queries if q["_id"] in qrels]
    for q, raw in zip(task.queries, queries):
        conv, turn = raw["_id"].split("-")
        assert (q.conversation_id, q.turn_id) == (conv, int(turn))
        assert [m.content for m in q.history] == raw["text"][:-1]
        assert [m.role for m in q.history] == ["user", "assistant"] * (int(turn) - 1)
        assert q.query == raw["text"][-1]
        assert q.qrels == qrels[raw["_id"]]
        assert q.gold_rewrite is None and q.answers == () and q.candidate_doc_ids is None


def test_by_hand(root):
    task = load_task("topiocqa", data_dir=root)
    assert len(task.queries) == 9 and len(task.corpus) == 40
    assert [q.qid for q in task.queries] == ["1-1", "1-2", "1-3", "1-4", "1-5", "1-6", "2-1", "2-2", "2-3"]
    q = task.queries[4]
    assert (q.conversation_id, q.turn_id, q.query) == ("1", 5, "When did it open to traffic?")
    assert q.history[6].role == "user" and q.history[6].content == "Who designed the Orrin Suspension Bridge?"
    assert q.history[7].role == "assistant"
    assert q.qrels == {"wiki:11": 1}
    assert task.corpus.titles[task.corpus.position("wiki:11")].startswith("Orrin Suspension Bridge; ")


def test_queries_without_qrels_are_dropped_and_counted(root, tmp_path):
    folder = _writable_copy(root, tmp_path / "topiocqa")
    queries = _jsonl(folder / "queries" / SHARD)
    _write_jsonl(folder / "queries" / SHARD, queries + [{"_id": "3-1", "text": ["Who built the Pellan lighthouse?"]}])
    qrels = _jsonl(folder / "data" / SHARD)
    _write_jsonl(folder / "data" / SHARD, qrels + [{"query-id": "9-9", "corpus-id": "wiki:1", "score": 1}])
    task = load_task("topiocqa", data_dir=folder)
    assert len(task.queries) == 9
    assert task.warnings["queries without qrels in this split (dropped, as mteb does)"] == 1
    assert task.warnings["qrels naming unknown queries (ignored)"] == 1


def test_single_split_of_another_name_is_used(root, tmp_path):
    """mteb's rule: the requested split if present, else the only one."""
    folder = _writable_copy(root, tmp_path / "topiocqa")
    readme = folder / "README.md"
    readme.write_text(
        readme.read_text().replace("split: validation\n    path: corpus/", "split: train\n    path: corpus/")
    )
    assert len(load_task("topiocqa", data_dir=folder).corpus) == 40


@pytest.mark.parametrize(
    "config,edit,message",
    [
        (
            "queries",
            lambda rows: rows[2].update(_id="1_3"),
            r"queries.* record 2 \(1_3\): query id must be '<conversation>-<turn>'",
        ),
        ("queries", lambda rows: rows[1]["text"].pop(), r"queries.* record 1 \(1-2\): 'text' has 2 strings"),
        (
            "queries",
            lambda rows: rows[4].update(text=[]),
            r"queries.* record 4 \(1-5\): 'text' must be a non-empty list",
        ),
        ("corpus", lambda rows: rows[3].update(_id=None), r"corpus.* record 3: no '_id'"),
        ("corpus", lambda rows: rows.append(dict(rows[0])), r"corpus.*duplicate document id.*'wiki:1'"),
    ],
)
def test_malformed_records_name_config_and_record(root, tmp_path, config, edit, message):
    folder = _writable_copy(root, tmp_path / "topiocqa")
    path = folder / config / SHARD
    rows = _jsonl(path)
    edit(rows)
    _write_jsonl(path, rows)
    with pytest.raises(MtrbenchError, match=message) as info:
        load_task("topiocqa", data_dir=folder)
    assert str(folder) in str(info.value)


def test_qrels_without_columns_name_the_config(root, tmp_path):
    folder = _writable_copy(root, tmp_path / "topiocqa")
    path = folder / "data" / SHARD
    _write_jsonl(path, [{"qid": r["query-id"], "pid": r["corpus-id"], "rel": r["score"]} for r in _jsonl(path)])
    with pytest.raises(MtrbenchError, match=r"config 'default'.*qrels need columns"):
        load_task("topiocqa", data_dir=folder)


def test_hub_source_offline_is_one_clear_error(monkeypatch):
    import mtrbench.data.hub as hub

    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    with pytest.raises(MtrbenchError, match=r"mteb/TopiOCQA@3f96cf4eb4d53dce45603e217cb050d156f5a443.*--data-dir"):
        load_task("topiocqa")


@pytest.mark.slow
def test_eval_end_to_end(root, tmp_path):
    proc = run_cli(
        "eval",
        "--task",
        "topiocqa",
        "--data-dir",
        str(root),
        "--model",
        "minilm",
        "--quiet",
        "--output-dir",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    results = list(tmp_path.glob("*/*/topiocqa.json"))
    assert len(results) == 1
    document = json.loads(results[0].read_text())
    scores = document["scores"]["validation"][0]
    assert scores["main_score"] == scores["ndcg_at_10"] and 0.0 < scores["ndcg_at_10"] <= 1.0
    assert document["mtrbench"]["queries"]["evaluated"] == 9 and document["mtrbench"]["corpus_size"] == 40
