"""ChatRAG-Bench retrieval subsets (format ``chatrag``) on the shared fixtures."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from cli_run import run_cli

from mtrbench.data import load_task
from mtrbench.data.cards import get_card
from mtrbench.data.loaders.chatrag import chunk_id
from mtrbench.infra.errors import MtrbenchError

DOC_SUBSETS = ("doc2dial", "quac", "qrecc")


@pytest.fixture(scope="module")
def root(shared) -> Path:
    return shared / "datasets/fixtures/chatrag_bench"


@pytest.fixture(scope="module")
def tsv(root) -> Path:
    return root / "external/topiocqa/full_wiki_segments.tsv"


def _json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def _tsv_rows(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    assert rows[0] == ["id", "text", "title"]
    return rows[1:]


def _writable_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for folder, _, files in os.walk(dst):
        os.chmod(folder, stat.S_IRWXU)
        for name in files:
            os.chmod(Path(folder) / name, stat.S_IRUSR | stat.S_IWUSR)
    return dst


def _with_options(name: str, **options):
    card = get_card(name)
    return dataclasses.replace(card, loader_options={**card.loader_options, **options})


# Conversations as read by hand from the fixtures: items 0-4 are one Fennick dialogue, 5-7 one
# library dialogue (doc2dial); all of quac, qrecc, topiocqa and inscit are a single dialogue each.
EXPECTED_QIDS = {
    "doc2dial": ["0_1", "0_2", "0_3", "0_4", "0_5", "1_1", "1_2", "1_3"],
    "quac": ["0_1", "0_2", "0_3", "0_4", "0_5", "0_6"],
    "qrecc": ["0_1", "0_2", "0_3", "0_4"],
    "topiocqa": ["0_1", "0_2", "0_3", "0_4", "0_5"],
    "inscit": ["0_1", "0_2", "0_3"],
}


@pytest.mark.parametrize("subset", DOC_SUBSETS)
def test_per_document_subsets_match_raw_files(root, subset):
    items = _json(root / f"data/{subset}/test.json")
    documents = _json(root / f"data/{subset}/documents.json")
    task = load_task(f"chatrag-{subset}", data_dir=root)

    assert task.split == "test" and not task.warnings
    expected_ids = [chunk_id(name, i) for name, chunks in documents.items() for i in range(len(chunks))]
    assert task.corpus.ids == expected_ids
    assert task.corpus.texts == [chunk for chunks in documents.values() for chunk in chunks]
    assert len(task.queries) == len(items)
    assert [q.qid for q in task.queries] == EXPECTED_QIDS[subset]
    for n, (q, item) in enumerate(zip(task.queries, items)):
        messages = item["messages"]
        assert q.conversation_id == q.qid.split("_")[0]
        assert q.turn_id == (len(messages) + 1) // 2 == int(q.qid.split("_")[1])
        assert [(m.role, m.content) for m in q.history] == [(m["role"], m["content"]) for m in messages[:-1]]
        assert q.query == messages[-1]["content"]
        assert q.answers == tuple(item["answers"])
        assert q.gold_rewrite is None
        document = item["document"]
        assert q.qrels == {chunk_id(document, item["ground_truth_ctx"]["index"]): 1}
        assert q.candidate_doc_ids == tuple(chunk_id(document, i) for i in range(len(documents[document])))
        assert q.meta == {"subset": subset, "item_index": n, "document": document}


def test_doc2dial_by_hand(root):
    task = load_task("chatrag-doc2dial", data_dir=root)
    assert len(task.corpus) == 9
    q = task.queries[3]
    assert (q.qid, q.conversation_id, q.turn_id) == ("0_4", "0", 4)
    assert [m.role for m in q.history] == ["user", "assistant"] * 3
    assert q.history[0].content == "What is the Fennick Protocol used for?"
    assert q.qrels == {"Fennick%20Protocol%20Specification::2": 1}
    library = task.queries[5]
    assert (library.qid, library.history) == ("1_1", ())
    assert library.candidate_doc_ids == tuple(f"Cedar%20Hollow%20Library%20Visitor%20Guide::{i}" for i in range(3))


def test_topiocqa_gold_by_exact_text(root, tsv):
    items = _json(root / "data/topiocqa/dev.json")
    rows = _tsv_rows(tsv)
    task = load_task("chatrag-topiocqa", data_dir=root, corpus_path=tsv)
    assert task.split == "dev" and not task.warnings
    assert task.corpus.ids == [r[0] for r in rows]
    assert task.corpus.titles == [r[2] for r in rows]
    assert [q.qid for q in task.queries] == EXPECTED_QIDS["topiocqa"]
    for q, item in zip(task.queries, items):
        assert q.qrels == {r[0]: 1 for r in rows if r[1] == item["ground_truth_ctx"]["ctx"]}
        assert q.candidate_doc_ids is None
        assert q.meta["topic"] == item["topic"]
        assert [m.content for m in q.history] == [m["content"] for m in item["messages"][:-1]]
    # by hand: turn 4 switches to the bridge; its gold is TSV row id 10
    assert task.queries[3].qrels == {"10": 1} and task.queries[3].meta["topic"] == "Orrin Suspension Bridge"


def test_topiocqa_id_modes_and_folder(root, tsv):
    rows = _tsv_rows(tsv)
    gold_row = next(i for i, r in enumerate(rows) if r[0] == "10")
    wiki = load_task(_with_options("chatrag-topiocqa", corpus_ids="wiki"), data_dir=root, corpus_path=tsv.parent)
    assert wiki.corpus.ids[0] == "wiki:1" and wiki.queries[3].qrels == {"wiki:10": 1}
    row = load_task(_with_options("chatrag-topiocqa", corpus_ids="row"), data_dir=root, corpus_path=tsv)
    assert row.corpus.ids[:2] == ["0", "1"] and row.queries[3].qrels == {str(gold_row): 1}


def test_topiocqa_duplicates_and_missing_gold_are_counted(root, tsv, tmp_path):
    rows = _tsv_rows(tsv)
    gold = _json(root / "data/topiocqa/dev.json")[0]["ground_truth_ctx"]["ctx"]
    corpus = tmp_path / "segments.tsv"
    kept = [r for r in rows if r[1] != _json(root / "data/topiocqa/dev.json")[1]["ground_truth_ctx"]["ctx"]]
    with corpus.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t")
        writer.writerow(["id", "text", "title"])
        writer.writerows(kept + [["999", gold, "Lake Varnholm [SEP] Copy"]])
    task = load_task("chatrag-topiocqa", data_dir=root, corpus_path=corpus)
    assert task.queries[0].qrels == {"2": 1, "999": 1}
    assert task.queries[1].qrels == {}
    assert task.warnings["gold passage text found in several passages (all marked relevant)"] == 1
    assert task.warnings["gold passage text not found in the corpus (no qrels)"] == 1


def test_topiocqa_without_corpus_says_what_to_pass(root):
    with pytest.raises(MtrbenchError, match=r"full_wiki_segments\.tsv.*McGill-NLP/topiocqa.*--corpus PATH"):
        load_task("chatrag-topiocqa", data_dir=root)
    task = load_task("chatrag-topiocqa", data_dir=root, require_corpus=False)
    assert len(task.corpus) == 0 and len(task.queries) == 5 and all(q.qrels == {} for q in task.queries)


def test_inscit_has_no_corpus(root, tsv):
    items = _json(root / "data/inscit/dev.json")
    with pytest.raises(MtrbenchError, match=r"no retrieval corpus exists for INSCIT.*--corpus PATH") as info:
        load_task("chatrag-inscit", data_dir=root)
    assert "\n" not in str(info.value)
    task = load_task("chatrag-inscit", data_dir=root, require_corpus=False)
    assert len(task.corpus) == 0
    assert [q.qid for q in task.queries] == EXPECTED_QIDS["inscit"]
    for q, item in zip(task.queries, items):
        assert q.qrels == {}
        assert q.meta["gold_ctx"] == [g["ctx"] for g in item["ground_truth_ctx"]]
        assert q.turn_id == (len(item["messages"]) + 1) // 2
    assert task.warnings["queries without qrels: no corpus to locate gold passage texts in"] == 3
    # a user-built corpus works the same way as TopiOCQA's (the TSV fixture holds the library passages)
    rows = _tsv_rows(tsv)
    judged = load_task("chatrag-inscit", data_dir=root, corpus_path=tsv)
    for q, item in zip(judged.queries, items):
        texts = {g["ctx"] for g in item["ground_truth_ctx"]}
        assert q.qrels == {r[0]: 1 for r in rows if r[1] in texts} != {}


def test_qrecc_gold_answer_option(root):
    items = _json(root / "data/qrecc/test.json")
    documents = _json(root / "data/qrecc/documents.json")
    plain = load_task("chatrag-qrecc", data_dir=root)
    assert plain.corpus.texts == documents["Lake Varnholm"]
    for mode in ("append", "prepend"):
        task = load_task(_with_options("chatrag-qrecc", gold_answer=mode), data_dir=root)
        expected = list(documents["Lake Varnholm"])
        for item in items:
            i, answer = item["ground_truth_ctx"]["index"], item["answers"][0]
            expected[i] = f"{expected[i]} || {answer}" if mode == "append" else f"{answer} || {expected[i]}"
        assert task.corpus.texts == expected
    with pytest.raises(MtrbenchError, match="gold_answer"):
        load_task(_with_options("chatrag-qrecc", gold_answer="both"), data_dir=root)


def test_documents_json_from_corpus_option(root, tmp_path):
    documents = _json(root / "data/quac/documents.json")
    other = tmp_path / "docs.json"
    other.write_text(json.dumps({"Marisol Quint": documents["Marisol Quint"] + ["extra chunk"]}))
    task = load_task("chatrag-quac", data_dir=root, corpus_path=other)
    assert task.corpus.ids[-1] == "Marisol%20Quint::5" and len(task.queries[0].candidate_doc_ids) == 6


def test_conversations_split_on_document_change(root, tmp_path):
    folder = _writable_copy(root, tmp_path / "chatrag")
    path = folder / "data/doc2dial/test.json"
    items = _json(path)
    # an item whose messages extend the previous item's but that belongs to another document
    items.insert(
        1, {**items[1], "document": "Cedar Hollow Library Visitor Guide", "ground_truth_ctx": {"index": 0, "ctx": "x"}}
    )
    path.write_text(json.dumps(items))
    task = load_task("chatrag-doc2dial", data_dir=folder)
    assert [q.qid for q in task.queries[:3]] == ["0_1", "1_2", "2_2"]
    assert task.warnings["gold ctx text differs from the documents.json chunk (index used)"] == 1


def test_hub_source_offline_is_one_clear_error(monkeypatch):
    import mtrbench.data.hub as hub
    from mtrbench.data.hub import fetch_file

    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    with pytest.raises(MtrbenchError, match=r"nvidia/ChatRAG-Bench.*--data-dir"):
        load_task("chatrag-quac")
    with pytest.raises(MtrbenchError, match=r"nvidia/ChatRAG-Bench.*--data-dir"):
        fetch_file("nvidia/ChatRAG-Bench", "data/quac/documents.json", "0" * 40, "chatrag-quac documents.json")


# ---------------------------------------------------------------------------- malformed records


def _break(root: Path, tmp_path: Path, subset: str, edit) -> tuple[Path, Path]:
    folder = _writable_copy(root, tmp_path / "chatrag")
    split = "test" if subset in DOC_SUBSETS else "dev"
    path = folder / f"data/{subset}/{split}.json"
    items = _json(path)
    edit(items)
    path.write_text(json.dumps(items))
    return folder, path


@pytest.mark.parametrize(
    "subset,edit,message",
    [
        (
            "doc2dial",
            lambda items: items[2]["messages"].pop(),
            r"record 2: 'messages' must end with the current user question",
        ),
        (
            "doc2dial",
            lambda items: items[4]["ground_truth_ctx"].update(index=17),
            r"record 4: ground_truth_ctx index 17 is out of range for document 'Fennick Protocol Specification'",
        ),
        (
            "quac",
            lambda items: items[3].update(document="Tomas Halvey"),
            r"record 3: document 'Tomas Halvey' is not in",
        ),
        ("qrecc", lambda items: items[1].update(ground_truth_ctx=None), r"record 1: no 'ground_truth_ctx'"),
        (
            "qrecc",
            lambda items: items[0]["messages"][0].update(role="narrator"),
            r"record 0: message 0 has unknown role",
        ),
        (
            "topiocqa",
            lambda items: items[2]["ground_truth_ctx"].update(ctx=None),
            r"record 2: ground_truth_ctx has neither 'index' nor 'ctx'",
        ),
        ("inscit", lambda items: items[1].update(messages=[]), r"record 1: 'messages' must be a non-empty list"),
    ],
)
def test_malformed_item_names_file_and_record(root, tmp_path, tsv, subset, edit, message):
    folder, path = _break(root, tmp_path, subset, edit)
    with pytest.raises(MtrbenchError, match=message) as info:
        load_task(
            f"chatrag-{subset}",
            data_dir=folder,
            corpus_path=tsv if subset == "topiocqa" else None,
            require_corpus=subset != "inscit",
        )
    assert str(path) in str(info.value)


def test_single_item_type_errors_name_the_record(root, tmp_path):
    # a field of the wrong type in every item (a lone odd item would already fail Arrow's schema)
    def answers_not_strings(items):
        for item in items:
            item["answers"] = {"text": item["answers"][0]}

    folder, path = _break(root, tmp_path, "quac", answers_not_strings)
    with pytest.raises(MtrbenchError, match=rf"{path} record 0: 'answers' must be a list of strings"):
        load_task("chatrag-quac", data_dir=folder)


def test_unparsable_file_and_bad_documents_name_the_file(root, tmp_path):
    folder = _writable_copy(root, tmp_path / "chatrag")
    (folder / "data/quac/test.json").write_text('[{"messages": [}')
    with pytest.raises(MtrbenchError, match=r"quac/test\.json"):
        load_task("chatrag-quac", data_dir=folder)
    (folder / "data/qrecc/documents.json").write_text(json.dumps({"Lake Varnholm": "one string"}))
    with pytest.raises(MtrbenchError, match=r"documents\.json: document 'Lake Varnholm' must map to a list"):
        load_task("chatrag-qrecc", data_dir=folder)
    with pytest.raises(MtrbenchError, match=r"no test file for subset 'doc2dial'"):
        load_task("chatrag-doc2dial", data_dir=tmp_path)


# ----------------------------------------------------------------------------------- end to end

E2E_SUBSETS = ("doc2dial", "quac", "qrecc", "topiocqa", "inscit")


@pytest.fixture(scope="module")
def e2e_runs(root, tsv, tmp_path_factory):
    """The five CLI runs, one after another in this process, then each test checks its own."""
    base = tmp_path_factory.mktemp("chatrag-e2e")
    runs = {}
    for subset in E2E_SUBSETS:
        out = base / subset
        extra = ["--corpus", str(tsv)] if subset in ("topiocqa", "inscit") else []
        args = ["eval", "--task", f"chatrag-{subset}", "--data-dir", str(root), "--model", "minilm", "--quiet"]
        runs[subset] = (run_cli(*args, "--output-dir", str(out), *extra), out)
    return runs


@pytest.mark.slow
@pytest.mark.parametrize("subset", E2E_SUBSETS)
def test_eval_end_to_end(e2e_runs, subset):
    proc, out = e2e_runs[subset]
    name = f"chatrag-{subset}"
    assert proc.returncode == 0, proc.stderr
    results = list(out.glob(f"*/*/{name}.json"))
    assert len(results) == 1
    document = json.loads(results[0].read_text())
    card = get_card(name)
    scores = document["scores"][card.eval_split][0]
    assert scores["main_score"] == scores[card.main_score] and 0.0 <= scores[card.main_score] <= 1.0
