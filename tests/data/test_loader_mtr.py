"""MTR-Bench loaders (tasks mtr-bench, mtr-bench-8turn) against the MTR fixtures.

Expected values are recomputed here from the raw JSONL files (or written by hand from reading them),
never taken from the loader.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_run import run_cli

from mtrbench.data import load_task
from mtrbench.data.cards import card_from_dict, get_card
from mtrbench.data.loaders.mtr import GOLD_TEXT_MISMATCH
from mtrbench.infra.errors import MtrbenchError

TWELVE = "mtr-qwen35-fp8-12turn"
LEGACY = "MTR-BENCH"
DOCS = "MTR-DOCUMENT"


@pytest.fixture(scope="module")
def mtr(shared) -> Path:
    return shared / "datasets/fixtures/mtr"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _rows(folder: Path, split: str) -> list[dict]:
    return _jsonl(folder / "data" / f"{split}-00000-of-00001.jsonl")


def _expected_12turn(rows: list[dict], split: str) -> list[dict]:
    """Independent re-derivation: conversations start where `turn` restarts at 1."""
    out, conv = [], -1
    for row in rows:
        if row["turn"] == 1:
            conv += 1
        msgs = [(m["role"], m["content"]) for m in row["messages"]]
        meta = {
            "switch_turn": row["switch_turn"],
            "cluster_idx": row["cluster_idx"],
            "ctxs_doc_ids": [str(c["document_idx"]) for c in row["ctxs"]],
        }
        if row["switch_turn"] > 0:
            meta["after_switch"] = row["turn"] > row["switch_turn"]
        out.append(
            {
                "qid": f"{split}-{conv}_{row['turn']}",
                "conversation_id": f"{split}-{conv}",
                "turn_id": row["turn"],
                "history": msgs[:-2],
                "query": msgs[-2][1],
                "answers": (msgs[-1][1],),
                "qrels": {str(row["ground_truth_document_idx"]): 1},
                "meta": meta,
            }
        )
    return out


def _as_dicts(task) -> list[dict]:
    return [
        {
            "qid": q.qid,
            "conversation_id": q.conversation_id,
            "turn_id": q.turn_id,
            "history": [(m.role, m.content) for m in q.history],
            "query": q.query,
            "answers": q.answers,
            "qrels": q.qrels,
            "meta": q.meta,
        }
        for q in task.queries
    ]


# ------------------------------------------------------------------------------------ 12-turn
def test_12turn_test_split_matches_raw_rows(mtr):
    task = load_task("mtr-bench", data_dir=mtr / TWELVE)
    assert task.split == "test" and task.name == "mtr-bench"
    assert _as_dicts(task) == _expected_12turn(_rows(mtr / TWELVE, "test"), "test")
    # hand-checked from the fixture: 2 conversations x 12 turns, the first switches after turn 6
    assert len(task.queries) == 24
    assert [q.qid for q in task.queries[:2]] == ["test-0_1", "test-0_2"]
    assert [q.qid for q in task.queries[12:14]] == ["test-1_1", "test-1_2"]
    assert [q.turn_id for q in task.queries] == list(range(1, 13)) * 2
    q7 = task.queries[6]
    assert q7.qid == "test-0_7" and q7.query == "ok different thing - who designed the orrin suspension bridge?"
    assert len(q7.history) == 12 and q7.history[0].content == "How deep is Lake Varnholm?"
    assert [m.role for m in q7.history] == ["user", "assistant"] * 6
    assert q7.qrels == {"38": 1} and q7.gold_rewrite is None
    assert q7.meta["switch_turn"] == 6 and q7.meta["after_switch"] is True
    assert task.queries[5].meta["after_switch"] is False
    no_switch = task.queries[12:]
    assert all(q.meta["switch_turn"] == -1 and "after_switch" not in q.meta for q in no_switch)
    assert task.queries[0].history == () and task.queries[0].qrels == {"27": 1}
    assert not task.warnings


def test_12turn_train_split(mtr):
    task = load_task("mtr-bench", split="train", data_dir=mtr / TWELVE)
    assert _as_dicts(task) == _expected_12turn(_rows(mtr / TWELVE, "train"), "train")
    assert len(task.queries) == 12 and {q.conversation_id for q in task.queries} == {"train-0"}
    assert task.queries[6].query == "switching topics, what is the fennick protocol for"


def test_corpus_is_row_positions_text_only(mtr):
    raw = _jsonl(mtr / DOCS / "data/train-00000-of-00001.jsonl")
    task = load_task("mtr-bench", data_dir=mtr / TWELVE)
    assert task.corpus.ids == [str(i) for i in range(len(raw))] and len(task.corpus) == 40
    assert task.corpus.texts == [r["text"] for r in raw]
    assert task.corpus.titles == [""] * 40  # the card embeds text only, as the authors do
    # gold passages are the corpus rows named by ground_truth_document_idx
    for row, q in zip(_rows(mtr / TWELVE, "test"), task.queries):
        assert task.corpus.texts[int(next(iter(q.qrels)))] == row["ground_truth_ctx"]["text"]


def test_corpus_titles_option_and_corpus_path(mtr, tmp_path):
    raw = _jsonl(mtr / DOCS / "data/train-00000-of-00001.jsonl")
    data = get_card("mtr-bench").to_dict()
    data["loader_options"] = {**data["loader_options"], "corpus_titles": True}
    card = card_from_dict(data, "titled.yaml")
    task = load_task(card, data_dir=mtr / TWELVE)
    assert task.corpus.titles == [r["title"] for r in raw]
    # --corpus as a folder (Hub layout) or a single JSONL file, with queries that have no sibling corpus
    alone = tmp_path / "alone" / TWELVE
    shutil.copytree(mtr / TWELVE, alone, copy_function=shutil.copyfile)
    for corpus in (mtr / DOCS, mtr / DOCS / "data/train-00000-of-00001.jsonl"):
        task = load_task("mtr-bench", data_dir=alone, corpus_path=corpus)
        assert task.corpus.ids == [str(i) for i in range(40)] and task.corpus.texts == [r["text"] for r in raw]


def test_missing_corpus(mtr, tmp_path):
    alone = tmp_path / TWELVE
    shutil.copytree(mtr / TWELVE, alone, copy_function=shutil.copyfile)
    with pytest.raises(MtrbenchError, match=r"MTR-DOCUMENT corpus.*OkayestProgrammer/MTR-DOCUMENT.*--corpus") as info:
        load_task("mtr-bench", data_dir=alone)
    assert "\n" not in str(info.value)
    task = load_task("mtr-bench", data_dir=alone, require_corpus=False)
    assert len(task.corpus) == 0 and len(task.queries) == 24
    assert all(q.qrels for q in task.queries)  # qrels kept without a corpus to check them against


# ------------------------------------------------------------------------------------- legacy
def test_legacy_8turn_groups_of_eight(mtr):
    rows = _rows(mtr / LEGACY, "train")
    task = load_task("mtr-bench-8turn", data_dir=mtr / LEGACY)
    assert task.split == "train" and len(task.queries) == len(rows) == 16 and len(task.corpus) == 40
    for n, (row, q) in enumerate(zip(rows, task.queries)):
        conv, turn = n // 8, n % 8 + 1
        assert (q.qid, q.conversation_id, q.turn_id) == (f"train-{conv}_{turn}", f"train-{conv}", turn)
        msgs = [(m["role"], m["content"]) for m in row["messages"]]
        assert [(m.role, m.content) for m in q.history] == msgs[:-2]
        assert q.query == msgs[-2][1] and q.answers == (msgs[-1][1],)
        assert q.qrels == {str(row["ground_truth_document_idx"]): 1}
        assert q.meta["switch_turn"] == 4 and q.meta["after_switch"] is (turn > 4)
        assert q.meta["cluster_idx"] == row["cluster_idx"]
    # hand-checked: turn 5 of conversation 0 is the Orrin bridge after four Lake Varnholm turns
    q5 = task.queries[4]
    assert q5.query == "Who designed the Orrin Suspension Bridge?" and len(q5.history) == 8
    assert q5.history[0].content == "How deep is Lake Varnholm?" and q5.qrels == {"38": 1}
    assert task.queries[8].query == "Who was Marisol Quint?" and task.queries[8].history == ()
    assert not task.warnings


def test_12turn_without_turn_or_switch_columns_groups_by_twelve(mtr, tmp_path):
    """Whether the Hub copy carries `turn`/`switch_turn` is unconfirmed (SCHEMAS §1): group rows by 12."""
    root = tmp_path / "mtr"
    shutil.copytree(mtr, root, copy_function=shutil.copyfile)
    path = root / TWELVE / "data/test-00000-of-00001.jsonl"
    rows = _jsonl(path)
    path.write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k not in ("turn", "switch_turn")}) + "\n" for r in rows),
        encoding="utf-8",
    )
    (root / TWELVE / "README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n    path: data/test-*\n---\n"
    )
    task = load_task("mtr-bench", data_dir=root / TWELVE)
    expected = _expected_12turn(rows, "test")
    for row in expected:
        row["meta"] = {k: v for k, v in row["meta"].items() if k not in ("switch_turn", "after_switch")}
    assert _as_dicts(task) == expected


# ---------------------------------------------------------------------------------- malformed
def _broken(mtr: Path, tmp_path: Path, folder: str, split: str, mutate) -> Path:
    root = tmp_path / "mtr"
    shutil.copytree(mtr, root, copy_function=shutil.copyfile)
    path = root / folder / "data" / f"{split}-00000-of-00001.jsonl"
    rows = _jsonl(path)
    rows = mutate(rows) or rows
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root / folder


def _edit(index, fn):
    def mutate(rows):
        fn(rows[index])

    return mutate


FILE_12 = r"mtr-qwen35-fp8-12turn/data/test-00000-of-00001\.jsonl"
FILE_8 = r"MTR-BENCH/data/train-00000-of-00001\.jsonl"


@pytest.mark.parametrize(
    "mutate,needle",
    [
        (
            _edit(3, lambda r: r["messages"][2].update(content="something else entirely")),
            FILE_12
            + r" record 3 \(test-0_4\): messages do not extend the previous row of conversation test-0 \(record 2\): "
            r"message 2 differs",
        ),
        (_edit(5, lambda r: r.update(turn=7)), FILE_12 + r" record 5: turn 7 where 6 or 1"),
        (_edit(0, lambda r: r.update(turn=2)), FILE_12 + r" record 0: turn 2 where 1 was expected"),
        (_edit(12, lambda r: r.update(turn=13)), FILE_12 + r" record 12: turn 13 exceeds the 12 turns"),
        (
            _edit(4, lambda r: r.update(messages=r["messages"][:-2])),
            FILE_12 + r" record 4 \(test-0_5\): 8 messages, expected 10",
        ),
        (
            _edit(2, lambda r: r.update(switch_turn=3)),
            FILE_12 + r" record 2 \(test-0_3\): switch_turn 3 differs from 6",
        ),
        (
            _edit(1, lambda r: r.update(ground_truth_document_idx=-1)),
            FILE_12 + r" record 1 \(test-0_2\): 'ground_truth_document_idx' must be a non-negative integer",
        ),
        (
            _edit(1, lambda r: r["ground_truth_ctx"].update(document_idx=3)),
            FILE_12
            + r" record 1 \(test-0_2\): ground_truth_document_idx 26 disagrees with ground_truth_ctx.document_idx 3",
        ),
        (
            _edit(0, lambda r: r["messages"][0].update(role="assistant")),
            FILE_12 + r" record 0 \(test-0_1\): message 0 has role 'assistant', expected 'user'",
        ),
        (
            _edit(0, lambda r: r["messages"][0].update(content="  ")),
            FILE_12 + r" record 0 \(test-0_1\): empty current question",
        ),
    ],
)
def test_malformed_12turn(mtr, tmp_path, mutate, needle):
    folder = _broken(mtr, tmp_path, TWELVE, "test", mutate)
    with pytest.raises(MtrbenchError, match=needle):
        load_task("mtr-bench", data_dir=folder)


def test_malformed_legacy_missing_row(mtr, tmp_path):
    folder = _broken(mtr, tmp_path, LEGACY, "train", lambda rows: rows[:2] + rows[3:])
    with pytest.raises(MtrbenchError, match=FILE_8 + r" record 2 \(train-0_3\): 8 messages, expected 6"):
        load_task("mtr-bench-8turn", data_dir=folder)


def test_legacy_incomplete_last_conversation_is_counted(mtr, tmp_path):
    folder = _broken(mtr, tmp_path, LEGACY, "train", lambda rows: rows[:13])
    task = load_task("mtr-bench-8turn", data_dir=folder)
    assert len(task.queries) == 13 and task.warnings["conversations without exactly 8 turns (kept)"] == 1


def test_card_without_turns_or_grouping(mtr):
    data = get_card("mtr-bench-8turn").to_dict()
    data["loader_options"] = {k: v for k, v in data["loader_options"].items() if k != "turns_per_conversation"}
    card = card_from_dict(data, "ungrouped.yaml")
    with pytest.raises(MtrbenchError, match=FILE_8 + r".*no 'turn' column.*turns_per_conversation"):
        load_task(card, data_dir=mtr / LEGACY)


def test_corpus_problems(mtr, tmp_path):
    def null_text(rows):
        rows[7]["text"] = None

    folder = _broken(mtr, tmp_path, DOCS, "train", null_text)
    needle = r"MTR-DOCUMENT/data/train-00000-of-00001\.jsonl record 7 \(7\): corpus 'text'"
    with pytest.raises(MtrbenchError, match=needle):
        load_task("mtr-bench", data_dir=folder.parent / TWELVE)


def test_gold_text_mismatch_and_unknown_gold_are_counted(mtr, tmp_path):
    def edit_corpus(rows):
        rows[27]["text"] = "A different passage now sits at row 27."

    _broken(mtr, tmp_path, DOCS, "train", edit_corpus)
    path = tmp_path / "mtr" / TWELVE / "data/test-00000-of-00001.jsonl"
    rows = _jsonl(path)
    rows[23]["ground_truth_document_idx"] = rows[23]["ground_truth_ctx"]["document_idx"] = 99
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    task = load_task("mtr-bench", data_dir=tmp_path / "mtr" / TWELVE)
    assert task.warnings[GOLD_TEXT_MISMATCH] == 1
    assert task.warnings["qrels naming unknown documents (dropped)"] == 1
    assert task.queries[23].qrels == {} and task.queries[0].qrels == {"27": 1}


def test_hub_unreachable_is_one_clear_error(monkeypatch):
    import mtrbench.data.hub as hub

    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    with pytest.raises(MtrbenchError, match=r"OkayestProgrammer/mtr-qwen35-fp8-12turn.*--data-dir"):
        load_task("mtr-bench")


# ----------------------------------------------------------------------------------- end to end
@pytest.mark.slow
@pytest.mark.parametrize(
    "task,folder,split,n", [("mtr-bench", TWELVE, "test", 24), ("mtr-bench-8turn", LEGACY, "train", 16)]
)
def test_cli_eval(mtr, tmp_path, task, folder, split, n):
    proc = run_cli(
        "eval",
        "--task",
        task,
        "--data-dir",
        str(mtr / folder),
        "--model",
        "minilm",
        "--quiet",
        "--output-dir",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(next(tmp_path.rglob(f"{task}.json")).read_text())
    scores = doc["scores"][split][0]
    assert scores["main_score"] == scores["recall_at_5"]
    assert doc["mtrbench"]["queries"]["total"] == doc["mtrbench"]["queries"]["evaluated"] == n
    assert doc["mtrbench"]["corpus_size"] == 40
    assert set(doc["mtrbench"]["breakdowns"]["topic_switch"]) == {"before_switch", "after_switch"}
