"""QReCC original release (format ``qrecc``) on the shared fixture."""

from __future__ import annotations

import dataclasses
import json
import zipfile
from pathlib import Path

import pytest
from cli_run import run_cli

from mtrbench.data import load_task
from mtrbench.data.cards import get_card
from mtrbench.data.loaders.qrecc import closest_span_f1, is_relevant, normalize_answer, normalize_url
from mtrbench.infra.errors import MtrbenchError


@pytest.fixture(scope="module")
def root(shared) -> Path:
    return shared / "datasets/fixtures/qrecc"


@pytest.fixture(scope="module")
def collection(root) -> Path:
    return root / "collection-paragraph"


def _turns(root: Path, split: str) -> list[dict]:
    with zipfile.ZipFile(root / "dataset/qrecc_data.zip") as archive:
        return json.loads(archive.read(f"qrecc_{split}.json"))


def _passages(collection: Path) -> list[dict]:
    return [
        json.loads(line)
        for path in sorted(collection.rglob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def _with_options(**options):
    card = get_card("qrecc")
    return dataclasses.replace(card, loader_options={**card.loader_options, **options})


def _expected_qrels(turn: dict, passages: list[dict], same_page_only: bool) -> dict[str, int]:
    """Gold by construction of the fixture: the passages holding the answer verbatim (F1 = 1)."""
    if not turn["Answer"]:
        return {}
    page = "http://web.archive.org/web/20191127093041id_/" + turn["Answer_URL"]
    return {
        p["id"]: 1
        for p in passages
        if turn["Answer"] in p["contents"] and (not same_page_only or p["id"].rsplit("_p", 1)[0] == page)
    }


@pytest.mark.parametrize("split", ["test", "train"])
def test_turns_match_raw_zip(root, collection, split):
    turns = _turns(root, split)
    passages = _passages(collection)
    task = load_task("qrecc", split=split, data_dir=root, corpus_path=collection)
    assert task.split == split
    assert task.corpus.ids == [p["id"] for p in passages]
    assert task.corpus.texts == [p["contents"] for p in passages]
    assert [q.qid for q in task.queries] == [f"{t['Conversation_no']}_{t['Turn_no']}" for t in turns]
    for q, t in zip(task.queries, turns):
        assert q.conversation_id == str(t["Conversation_no"]) and q.turn_id == t["Turn_no"]
        assert [m.content for m in q.history] == t["Context"]
        assert [m.role for m in q.history] == ["user", "assistant"] * (t["Turn_no"] - 1)
        assert q.query == t["Question"] and q.gold_rewrite == t["Rewrite"]
        assert q.answers == ((t["Answer"],) if t["Answer"] else ())
        assert q.qrels == _expected_qrels(t, passages, same_page_only=True)
        assert q.meta == {"conversation_source": t["Conversation_source"], "answer_urls": t["Answer_URL"].split()}


def test_test_split_by_hand(root, collection):
    task = load_task("qrecc", data_dir=root, corpus_path=collection)
    assert [q.qid for q in task.queries] == ["74_1", "74_2", "74_3", "74_4", "75_1", "75_2", "75_3"]
    assert len(task.corpus) == 40
    wayback = "http://web.archive.org/web/20191127093041id_/https://en.wikipedia.org/wiki/"
    assert task.queries[1].qrels == {wayback + "Lake_Varnholm_p2": 1}
    assert task.queries[5].qrels == {wayback + "Orrin_Suspension_Bridge_p2": 1}
    unanswered = task.queries[6]
    assert (
        unanswered.answers == ()
        and unanswered.qrels == {}
        and unanswered.history[2].content == "When did it open to traffic?"
    )
    assert task.warnings == {"turns without an answer (no qrels, as in the official evaluation)": 1}


def test_scope_all_judges_every_passage(root, collection):
    passages = _passages(collection)
    task = load_task(_with_options(qrels_scope="all"), data_dir=root, corpus_path=collection)
    for q, t in zip(task.queries, _turns(root, "test")):
        assert q.qrels == _expected_qrels(t, passages, same_page_only=False)
    with pytest.raises(MtrbenchError, match="qrels_scope"):
        load_task(_with_options(qrels_scope="some"), data_dir=root, corpus_path=collection)


def test_data_dir_variants(root, collection, tmp_path):
    single = collection / "wayback/0/part-0000.jsonl"
    by_zip = load_task("qrecc", data_dir=root / "dataset/qrecc_data.zip", corpus_path=single)
    (tmp_path / "qrecc_test.json").write_text(json.dumps(_turns(root, "test")))
    by_json = load_task("qrecc", data_dir=tmp_path, corpus_path=single)
    assert [q.qid for q in by_zip.queries] == [q.qid for q in by_json.queries]
    assert [q.qrels for q in by_zip.queries] == [q.qrels for q in by_json.queries]


def test_missing_corpus_explains_the_collection(root):
    with pytest.raises(
        MtrbenchError, match=r"passage collection, which is not distributed.*apple/ml-qrecc.*--corpus PATH"
    ):
        load_task("qrecc", data_dir=root)
    task = load_task("qrecc", data_dir=root, require_corpus=False)
    assert len(task.corpus) == 0 and len(task.queries) == 7 and all(q.qrels == {} for q in task.queries)


def test_missing_data_points_to_github(root, tmp_path):
    with pytest.raises(MtrbenchError, match=r"not on the Hugging Face Hub.*github\.com/apple/ml-qrecc.*--data-dir"):
        load_task("qrecc")
    with pytest.raises(MtrbenchError, match=r"no qrecc_test\.json or qrecc_data\.zip"):
        load_task("qrecc", data_dir=tmp_path)
    pointer = tmp_path / "qrecc_data.zip"
    pointer.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n")
    with pytest.raises(MtrbenchError, match=r"Git LFS pointer.*git lfs pull"):
        load_task("qrecc", data_dir=tmp_path)
    with zipfile.ZipFile(pointer, "w") as archive:
        archive.writestr("qrecc_train.json", "[]")
    with pytest.raises(MtrbenchError, match=r"no qrecc_test\.json inside"):
        load_task("qrecc", data_dir=tmp_path)


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda t: t.update(Turn_no="two"), r"record 0: needs integer Conversation_no and Turn_no"),
        (lambda t: t.update(Context=["only a question"]), r"record 0 \(74_2\): 'Context' has 1 strings"),
        (lambda t: t.update(Question="  "), r"record 0 \(74_2\): 'Question' must be a non-empty string"),
        (lambda t: t.update(Context="How deep is it?"), r"record 0 \(74_2\): 'Context' must be a list of strings"),
    ],
)
def test_malformed_turn_names_file_and_record(root, tmp_path, edit, message):
    turn = dict(_turns(root, "test")[1])
    edit(turn)
    path = tmp_path / "qrecc_test.json"
    path.write_text(json.dumps([turn]))
    with pytest.raises(MtrbenchError, match=message) as info:
        load_task("qrecc", data_dir=tmp_path, require_corpus=False)
    assert str(path) in str(info.value)


def test_missing_field_names_the_file(root, tmp_path):
    path = tmp_path / "qrecc_test.json"
    path.write_text(json.dumps([{k: v for k, v in t.items() if k != "Turn_no"} for t in _turns(root, "test")]))
    with pytest.raises(MtrbenchError, match=rf"{path}: turn records lack field\(s\) \['Turn_no'\]"):
        load_task("qrecc", data_dir=tmp_path, require_corpus=False)


def test_context_length_mismatch_is_counted(root, tmp_path):
    turns = _turns(root, "test")
    turns[1]["Turn_no"] = 5
    (tmp_path / "qrecc_test.json").write_text(json.dumps(turns))
    task = load_task("qrecc", data_dir=tmp_path, require_corpus=False)
    assert task.queries[1].qid == "74_5" and len(task.queries[1].history) == 2
    assert task.warnings["Context length differs from 2*(Turn_no-1) (Context kept as history)"] == 1


def test_official_relevance_heuristic():
    passage = "The Orrin Suspension Bridge opened to traffic on 14 May 1931, after four years of work."
    assert closest_span_f1(normalize_answer(passage), "It opened to traffic on 14 May 1931.") == pytest.approx(
        2 * (7 / 8) / (1 + 7 / 8)
    )  # span "opened to traffic on 14 may 1931": P = 7/7, R = 7/8 answer tokens
    assert is_relevant(passage, "opened to traffic on 14 May 1931")
    assert not is_relevant(passage, "Heavy trucks were banned from the bridge in 1998.")
    assert is_relevant("Concatenated", "cat")  # the official test matches normalised substrings, even inside words
    assert not is_relevant(passage, "The.")  # no words left: never relevant (the official script would say always)
    assert normalize_url("http://web.archive.org/web/2019id_/https://www.Example.org/a/b/#x") == "example.org/a/b"
    assert (
        normalize_url("https://en.wikipedia.org/wiki/Lake_Varnholm#Geography") == "en.wikipedia.org/wiki/Lake_Varnholm"
    )


@pytest.mark.slow
def test_eval_end_to_end(root, collection, tmp_path):
    proc = run_cli(
        "eval",
        "--task",
        "qrecc",
        "--data-dir",
        str(root),
        "--corpus",
        str(collection),
        "--model",
        "minilm",
        "--quiet",
        "--output-dir",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    results = list(tmp_path.glob("*/*/qrecc.json"))
    assert len(results) == 1
    document = json.loads(results[0].read_text())
    scores = document["scores"]["test"][0]
    assert scores["main_score"] == scores["mrr_at_100"] and 0.0 < scores["mrr_at_100"] <= 1.0
    assert document["mtrbench"]["queries"]["evaluated"] == 6  # 75_3 has no answer: no qrels, excluded
    assert document["mtrbench"]["corpus_size"] == 40
