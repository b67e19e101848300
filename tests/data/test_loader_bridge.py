"""BRIDGE loader (SCHEMAS.md §6): refined qrels per query, original + refined sets in extra_qrels."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from cli_run import run_cli

from mtrbench.cli import main as cli_main
from mtrbench.data import load_task
from mtrbench.infra.errors import MtrbenchError

SUBSETS = ["msmarco", "nq", "lifestyle", "recreation", "science", "technology", "writing"]


@pytest.fixture(scope="module")
def bridge(shared) -> Path:
    return shared / "datasets/fixtures/bridge"


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def beir_qrels(path: Path) -> dict[str, dict[str, int]]:
    with path.open(encoding="utf-8") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    assert rows[0] == ["query-id", "corpus-id", "score"]
    out: dict[str, dict[str, int]] = {}
    for qid, doc, score in rows[1:]:
        out.setdefault(qid, {})[doc] = int(score)
    return out


def check_against_raw(task, raw_rows, corpus_ids, original):
    assert [q.qid for q in task.queries] == [str(r["q_id"]) for r in raw_rows]
    for q, r in zip(task.queries, raw_rows):
        assert q.query == r["query"] and q.history == () and q.turn_id == 1 and q.conversation_id == q.qid
        assert q.qrels == {str(d): 1 for d in r["doc_id"]}
        assert q.answers == tuple(r["answers"]) and q.gold_rewrite is None
    assert sorted(task.corpus.ids) == sorted(corpus_ids)
    assert task.extra_qrels["refined"] == {str(r["q_id"]): {str(d): 1 for d in r["doc_id"]} for r in raw_rows}
    assert task.extra_qrels["original"] == {str(r["q_id"]): original[str(r["q_id"])] for r in raw_rows}


def holes(task) -> dict[str, set[str]]:
    return {
        qid: set(docs) - set(task.extra_qrels["original"].get(qid, {}))
        for qid, docs in task.extra_qrels["refined"].items()
        if set(docs) - set(task.extra_qrels["original"].get(qid, {}))
    }


def test_msmarco_fixture(bridge):
    task = load_task("bridge-msmarco", data_dir=bridge)
    raw = jsonl(bridge / "DISLab-BRIDGE/msmarco_test.jsonl")
    corpus_ids = [r["_id"] for r in jsonl(bridge / "sources/beir_msmarco/corpus.jsonl")]
    check_against_raw(task, raw, corpus_ids, beir_qrels(bridge / "sources/beir_msmarco/qrels/dev.tsv"))
    assert len(task.queries) == 4 and len(task.corpus) == 40 and task.split == "test"
    # hand-read from the fixture: every query but 1100002 gained one hole
    assert holes(task) == {"1100001": {"13"}, "1100003": {"23"}, "1100004": {"37"}}
    assert task.queries[0].qrels == {"9": 1, "13": 1} and task.queries[0].answers == ("Hedda Lorne",)
    assert task.queries[0].meta == {"subset": "msmarco"}
    assert dict(task.warnings) == {}


def test_lifestyle_fixture(bridge):
    task = load_task("bridge-lifestyle", data_dir=bridge)
    raw = jsonl(bridge / "DISLab-BRIDGE/lifestyle_test.jsonl")
    folder = bridge / "sources/robustqa/lifestyle/test"
    corpus_ids = [r["doc_id"] for r in jsonl(folder / "documents.jsonl")]
    original = {r["qid"]: {d["doc_id"]: 1 for d in r["documents"]} for r in jsonl(folder / "annotations.jsonl")}
    check_against_raw(task, raw, corpus_ids, original)
    assert [q.qid for q in task.queries] == ["lifestyle-search-test-0", "lifestyle-forum-test-0"]
    assert len(task.corpus) == 8
    assert task.queries[1].qrels == {"4": 1, "2": 1}
    assert task.queries[0].answers == ("twice a year", "in April and in late August")
    assert holes(task) == {"lifestyle-forum-test-0": {"2"}}
    assert dict(task.warnings) == {}


@pytest.mark.parametrize(
    "name,corpus",
    [
        ("bridge-msmarco", "sources/beir_msmarco"),
        ("bridge-msmarco", "sources"),
        ("bridge-msmarco", "sources/beir_msmarco/corpus.jsonl"),
        ("bridge-lifestyle", "sources/robustqa"),
        ("bridge-lifestyle", "sources/robustqa/lifestyle/test"),
    ],
)
def test_bridge_folder_plus_corpus_option(bridge, name, corpus):
    """--data-dir the BRIDGE copy, --corpus the source dataset: same task as the combined layout."""
    combined = load_task(name, data_dir=bridge)
    split = load_task(name, data_dir=bridge / "DISLab-BRIDGE", corpus_path=bridge / corpus)
    assert [(q.qid, q.qrels) for q in split.queries] == [(q.qid, q.qrels) for q in combined.queries]
    assert split.corpus.ids == combined.corpus.ids and split.extra_qrels == combined.extra_qrels


def test_queries_only_keeps_qrels(bridge):
    task = load_task("bridge-msmarco", data_dir=bridge / "DISLab-BRIDGE", require_corpus=False)
    assert len(task.corpus) == 0 and len(task.queries) == 4
    assert task.queries[2].qrels == {"17": 1, "23": 1}  # not pruned although no corpus is loaded
    assert task.extra_qrels["original"] == {} and len(task.extra_qrels["refined"]) == 4
    assert task.warnings["original qrels unavailable (no source dataset given)"] == 1


@pytest.mark.parametrize("name,needle", [("bridge-msmarco", "msmarco.zip"), ("bridge-lifestyle", "robustqa-acl23")])
def test_missing_source_corpus_is_one_clear_error(bridge, name, needle):
    with pytest.raises(MtrbenchError) as info:
        load_task(name, data_dir=bridge / "DISLab-BRIDGE")
    message = str(info.value)
    assert "\n" not in message and "--corpus PATH" in message and needle in message


def _nq_layout(tmp_path: Path) -> tuple[Path, Path]:
    """A Hub-style BRIDGE copy (README configs, shard not named after the subset) and a BEIR nq folder."""
    data = tmp_path / "BRIDGE"
    (data / "data").mkdir(parents=True)
    (data / "README.md").write_text(
        "---\nconfigs:\n- config_name: NQ\n  data_files:\n  - split: test\n"
        "    path: data/test-00000-of-00001.jsonl\n---\n"
    )
    rows = [
        {"q_id": "test0", "query": "how deep is lake varnholm", "doc_id": [1, 2], "answers": ["212 metres"]},
        {"q_id": "test1", "query": "who designed the orrin bridge", "doc_id": [], "answers": []},
        {"q_id": "test2", "query": "which comet did quint find", "doc_id": [3], "answers": ["Quint-Halvey"]},
    ]
    (data / "data/test-00000-of-00001.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    beir = tmp_path / "nq"
    (beir / "qrels").mkdir(parents=True)
    docs = {
        "doc1": "Lake Varnholm is 212 metres deep.",
        "doc2": "Lake Varnholm is the deepest lake of the valley.",
        "doc3": "Marisol Quint discovered Comet Quint-Halvey.",
        "doc4": "Hedda Lorne designed the Orrin bridge.",
    }
    (beir / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n" for k, v in docs.items())
    )
    (beir / "qrels/test.tsv").write_text("query-id\tcorpus-id\tscore\ntest0\tdoc1\t1\ntest1\tdoc4\t1\ntest2\tdoc3\t1\n")
    return data, beir


def test_hub_layout_config_integer_ids_and_empty_lists(tmp_path):
    data, beir = _nq_layout(tmp_path)
    # BEIR nq ids are doc<n>; BRIDGE rows here carry integers, which the card's corpus does not know
    task = load_task("bridge-nq", data_dir=data, corpus_path=beir)
    assert [q.qid for q in task.queries] == ["test0", "test1", "test2"]
    assert task.queries[1].qrels == {}  # empty doc_id: kept, excluded from metrics, counted
    assert task.warnings["queries with an empty refined doc_id list (kept, excluded from metrics)"] == 1
    assert task.warnings["qrels naming unknown documents (dropped)"] == 3  # '1', '2', '3' are not BEIR nq ids
    no_corpus = load_task("bridge-nq", data_dir=data, require_corpus=False)
    assert no_corpus.queries[0].qrels == {"1": 1, "2": 1}  # integers cast to str, kept without a corpus


def _broken_copy(bridge: Path, tmp_path: Path, line: str) -> Path:
    folder = tmp_path / "bridge"
    shutil.copytree(bridge, folder)
    path = folder / "DISLab-BRIDGE/msmarco_test.jsonl"
    lines = path.read_text().splitlines()
    lines[1] = line
    path.write_text("\n".join(lines) + "\n")
    return folder


@pytest.mark.parametrize(
    "line,needle",
    [
        (
            '{"q_id": "1100002", "query": "x?", "doc_id": "1", "answers": []}',
            r"record 1 \(1100002\): 'doc_id' must be a list",
        ),
        ('{"query": "x?", "doc_id": ["1"], "answers": []}', r"record 1: missing 'q_id'"),
        ('{"q_id": "1100002", "query": 7, "doc_id": ["1"]}', r"record 1 \(1100002\): 'query' must be a string"),
        ('{"q_id": "1100002", "query": "x?", "doc_id": ["1"], ', r"record 1: not valid JSON"),
    ],
)
def test_malformed_bridge_rows_name_file_and_record(bridge, tmp_path, line, needle):
    folder = _broken_copy(bridge, tmp_path, line)
    with pytest.raises(MtrbenchError, match=r"DISLab-BRIDGE/msmarco_test\.jsonl " + needle):
        load_task("bridge-msmarco", data_dir=folder)


def test_malformed_original_annotations_name_file_and_record(bridge, tmp_path):
    folder = tmp_path / "bridge"
    shutil.copytree(bridge, folder)
    path = folder / "sources/robustqa/lifestyle/test/annotations.jsonl"
    rows = jsonl(path)
    del rows[1]["documents"][0]["doc_id"]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(MtrbenchError, match=r"annotations\.jsonl record 1 \(lifestyle-forum-test-0\): documents\[0\]"):
        load_task("bridge-lifestyle", data_dir=folder)


def _result(out: Path, task: str) -> dict:
    files = list(out.rglob(f"{task}.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text())


@pytest.mark.slow
@pytest.mark.parametrize(
    "name,args",
    [
        ("bridge-msmarco", ["--data-dir", "."]),
        ("bridge-lifestyle", ["--data-dir", "DISLab-BRIDGE", "--corpus", "sources/robustqa"]),
    ],
)
def test_eval_end_to_end(bridge, tmp_path, name, args):
    args = [str(bridge / a) if i % 2 else a for i, a in enumerate(args)]
    proc = run_cli("eval", "--task", name, *args, "--model", "minilm", "--quiet", "--output-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    doc = _result(tmp_path, name)
    assert doc["task_name"] == name
    n = len(jsonl(bridge / f"DISLab-BRIDGE/{name.split('-')[1]}_test.jsonl"))
    assert doc["mtrbench"]["queries"]["evaluated"] == n
    assert doc["scores"]["test"][0]["main_score"] == doc["scores"]["test"][0]["hit_rate_at_10"]


@pytest.mark.parametrize("subset", ["nq", "recreation", "science", "technology", "writing"])
def test_eval_end_to_end_other_subsets(tmp_path, subset, capsys):
    """The subsets without a shared fixture, on a small synthetic copy, through the CLI entry point in-process."""
    data, beir = _nq_layout(tmp_path)
    rows = [json.loads(line) for line in (data / "data/test-00000-of-00001.jsonl").read_text().splitlines()]
    if subset == "nq":
        for r in rows:
            r["doc_id"] = [f"doc{d}" for d in r["doc_id"]]
        (data / "data/test-00000-of-00001.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        source = beir
    else:  # RobustQA layout: <subset>/test/documents.jsonl + annotations.jsonl, ids = line indexes
        (data / f"{subset}_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        source = tmp_path / "robustqa"
        folder = source / subset / "test"
        folder.mkdir(parents=True)
        texts = [json.loads(line)["text"] for line in (beir / "corpus.jsonl").read_text().splitlines()]
        texts.insert(0, "An unrelated forum answer about tea.")
        folder.joinpath("documents.jsonl").write_text(
            "".join(
                json.dumps({"doc_id": str(i), "title": "", "text": t, "metadata": {}}) + "\n"
                for i, t in enumerate(texts)
            )
        )
        folder.joinpath("annotations.jsonl").write_text(
            json.dumps({"qid": "test0", "question": rows[0]["query"], "documents": [{"answers": [], "doc_id": "1"}]})
            + "\n"
        )
    code = cli_main(
        [
            "eval",
            "--task",
            f"bridge-{subset}",
            "--data-dir",
            str(data),
            "--corpus",
            str(source),
            "--model",
            "minilm",
            "--quiet",
            "--output-dir",
            str(tmp_path / "out"),
        ]
    )
    assert code == 0, capsys.readouterr().err
    doc = _result(tmp_path / "out", f"bridge-{subset}")
    assert doc["mtrbench"]["queries"] == {"total": 3, "evaluated": 2, "excluded_without_positives": 1}
    assert doc["mtrbench"]["corpus_size"] == (4 if subset == "nq" else 5)


def test_malformed_original_beir_qrels_name_file_and_record(bridge, tmp_path):
    folder = tmp_path / "bridge"
    shutil.copytree(bridge, folder)
    path = folder / "sources/beir_msmarco/qrels/dev.tsv"
    lines = path.read_text().splitlines()
    lines[2] = lines[2].rsplit("\t", 1)[0] + "\tyes"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MtrbenchError, match=r"qrels/dev\.tsv record 2 \(1100002\): score 'yes' is not an integer"):
        load_task("bridge-msmarco", data_dir=folder)
