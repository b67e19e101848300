"""CORAL loader (task coral) against the CORAL fixture.

Expected values are recomputed here from the raw files (json / whitespace-split .trec), or written
by hand from reading them.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from cli_run import run_cli

from mtrbench.data import load_task
from mtrbench.data.cards import card_from_dict, get_card
from mtrbench.data.loaders.coral import PIDS_DIFFER, UNKNOWN_QRELS
from mtrbench.infra.errors import MtrbenchError

SPLITS = {
    "test": ("test/new_test_conversation.json", "test/new_test_qrel.trec"),
    "train": ("train/new_train_conversation.json", "train/new_train_qrel.trec"),
}


@pytest.fixture(scope="module")
def coral(shared) -> Path:
    return shared / "datasets/fixtures/coral"


def _trec(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            qid, _, pid, rel = line.split()
            qrels.setdefault(qid, {})[pid] = int(rel)
    return qrels


def _expected(coral: Path, split: str, strip: bool = True) -> list[dict]:
    conv_file, qrels_file = SPLITS[split]
    conversations = json.loads((coral / conv_file).read_text(encoding="utf-8"))
    qrels = _trec(coral / qrels_file)
    out = []
    for conv in conversations:
        history = []
        for turn in conv["turns"]:
            qid = f"{conv['conv_id']}_{turn['turn_id']}"
            out.append(
                {
                    "qid": qid,
                    "conversation_id": conv["conv_id"],
                    "turn_id": turn["turn_id"],
                    "history": list(history),
                    "query": turn["question"],
                    "gold_rewrite": turn["golden_rewrite"],
                    "answers": (turn["response"],),
                    "qrels": qrels[qid],
                }
            )
            response = re.sub(r"\s*\[\d+\]", "", turn["response"]) if strip else turn["response"]
            history += [("user", turn["question"]), ("assistant", response)]
    return out


def _as_dicts(task) -> list[dict]:
    return [
        {
            "qid": q.qid,
            "conversation_id": q.conversation_id,
            "turn_id": q.turn_id,
            "history": [(m.role, m.content) for m in q.history],
            "query": q.query,
            "gold_rewrite": q.gold_rewrite,
            "answers": q.answers,
            "qrels": q.qrels,
        }
        for q in task.queries
    ]


@pytest.mark.parametrize("split", ["test", "train"])
def test_splits_match_raw_files(coral, split):
    task = load_task("coral", split=split, data_dir=coral)
    assert task.split == split
    assert _as_dicts(task) == _expected(coral, split)
    corpus = [json.loads(line) for line in (coral / "passage_corpus.json").read_text().splitlines() if line.strip()]
    assert task.corpus.ids == [str(r["ref_id"]) for r in corpus] and len(task.corpus) == 40
    assert task.corpus.texts == [r["ref_string"] for r in corpus] and set(task.corpus.titles) == {""}
    assert not task.warnings


def test_test_split_by_hand(coral):
    task = load_task("coral", data_dir=coral)
    assert [q.qid for q in task.queries] == [
        "Test_a_1_1",
        "Test_a_1_2",
        "Test_a_1_3",
        "Test_a_1_4",
        "Test_d_1_1",
        "Test_d_1_2",
        "Test_d_1_3",
        "Test_d_1_4",
        "Test_d_1_5",
    ]
    q = task.queries[1]
    assert q.query == "Which comet did she discover?" and q.turn_id == 2
    assert q.gold_rewrite == "Which comet did Marisol Quint discover?"
    assert q.qrels == {"18": 1, "24": 1}
    # the reference answer keeps its citations; the history response loses them
    assert q.answers == ("She discovered Comet Quint-Halvey on photographic plates in March 1964 [18][24].",)
    assert [(m.role, m.content) for m in q.history] == [
        ("user", "Who was Marisol Quint?"),
        (
            "assistant",
            "Marisol Quint (1931-2008) was an astronomer who specialised in comets and other small "
            "bodies of the outer solar system.",
        ),
    ]
    assert q.meta == {"conversation_type": "a", "sampling": "LDS"}
    last = task.queries[-1]
    assert last.qid == "Test_d_1_5" and len(last.history) == 8 and last.qrels == {"11": 1}
    assert last.meta["conversation_type"] == "d"
    assert task.corpus.texts[task.corpus.position("11")].startswith("Construction began in 1927")


def test_history_citations_kept_when_option_off(coral):
    data = get_card("coral").to_dict()
    data["loader_options"] = {**data["loader_options"], "strip_history_citations": False}
    task = load_task(card_from_dict(data, "raw.yaml"), data_dir=coral)
    assert _as_dicts(task) == _expected(coral, "test", strip=False)
    assert task.queries[1].history[1].content.endswith("solar system [17].")


def test_corpus_options(coral, tmp_path):
    task = load_task("coral", data_dir=coral, require_corpus=False)
    assert len(task.corpus) == 0 and len(task.queries) == 9 and all(q.qrels for q in task.queries)
    other = tmp_path / "elsewhere"
    other.mkdir()
    shutil.copyfile(coral / "passage_corpus.json", other / "passage_corpus.json")
    for corpus in (other, other / "passage_corpus.json"):
        task = load_task("coral", data_dir=coral, corpus_path=corpus)
        assert len(task.corpus) == 40 and task.queries[0].qrels == {"17": 1}


def test_conversations_as_json_lines_and_missing_rewrites(coral, tmp_path):
    """The README calls the file "jsonline"; test turns may lack golden_rewrite (SCHEMAS §3 quirks)."""
    root = tmp_path / "coral"
    shutil.copytree(coral, root, copy_function=shutil.copyfile)
    path = root / "test/new_test_conversation.json"
    conversations = json.loads(path.read_text(encoding="utf-8"))
    for conv in conversations:
        for turn in conv["turns"]:
            del turn["golden_rewrite"]
    path.write_text("".join(json.dumps(c) + "\n" for c in conversations), encoding="utf-8")
    task = load_task("coral", data_dir=root)
    expected = _expected(coral, "test")
    for row in expected:
        row["gold_rewrite"] = None
    assert _as_dicts(task) == expected and not task.has_rewrites


# ---------------------------------------------------------------------------------- malformed
def _copy(coral: Path, tmp_path: Path) -> Path:
    root = tmp_path / "coral"
    shutil.copytree(coral, root, copy_function=shutil.copyfile)
    return root


def _edit_conversations(root: Path, fn) -> None:
    path = root / "test/new_test_conversation.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    fn(data)
    path.write_text(json.dumps(data), encoding="utf-8")


CONV = r"test/new_test_conversation\.json"


@pytest.mark.parametrize(
    "fn,needle",
    [
        (
            lambda d: d[1]["turns"][2].update(turn_id=4),
            CONV + r" record 1 \(Test_d_1_4\): turn 3 of the conversation has turn_id 4",
        ),
        (
            lambda d: d[0]["turns"][1].update(question=" "),
            CONV + r" record 0 \(Test_a_1_2\): needs a non-empty string 'question'",
        ),
        (lambda d: d[1].update(turns=[]), CONV + r" record 1 \(Test_d_1\): 'turns' must be a non-empty list"),
        (lambda d: d[0].update(conv_id=""), CONV + r" record 0 \(\): needs a string 'conv_id'"),
    ],
)
def test_malformed_conversations(coral, tmp_path, fn, needle):
    root = _copy(coral, tmp_path)
    _edit_conversations(root, fn)
    with pytest.raises(MtrbenchError, match=needle):
        load_task("coral", data_dir=root)


def test_malformed_trec_line(coral, tmp_path):
    root = _copy(coral, tmp_path)
    path = root / "test/new_test_qrel.trec"
    lines = path.read_text().splitlines()
    lines[3] = "Test_a_1_3 0 19"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        MtrbenchError, match=r"test/new_test_qrel\.trec record 3: a qrels line needs 'qid iter docid grade', got 3"
    ):
        load_task("coral", data_dir=root)
    lines[3] = "Test_a_1_3 0 19 yes"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MtrbenchError, match=r"new_test_qrel\.trec record 3 \(Test_a_1_3\): grade 'yes'"):
        load_task("coral", data_dir=root)


def test_malformed_corpus_record(coral, tmp_path):
    root = _copy(coral, tmp_path)
    path = root / "passage_corpus.json"
    lines = path.read_text().splitlines()
    lines[5] = json.dumps({"ref_id": 6, "text": "wrong field name"})
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MtrbenchError, match=r"passage_corpus\.json record 5 \(6\): needs a string 'ref_string'"):
        load_task("coral", data_dir=root)


def test_missing_conversation_file(coral, tmp_path):
    root = _copy(coral, tmp_path)
    (root / "test/new_test_conversation.json").unlink()
    with pytest.raises(MtrbenchError, match=r"missing .*test/new_test_conversation\.json"):
        load_task("coral", data_dir=root)


def test_qrels_disagreements_and_fallback_are_counted(coral, tmp_path):
    root = _copy(coral, tmp_path)
    path = root / "test/new_test_qrel.trec"
    text = path.read_text().replace("Test_a_1_4 0 20 1", "Test_a_1_4 0 21 1") + "Test_z_9_1 0 3 1\n"
    path.write_text(text)
    task = load_task("coral", data_dir=root)
    assert task.queries[3].qrels == {"21": 1}  # the .trec file wins
    assert task.warnings[PIDS_DIFFER] == 1 and task.warnings[UNKNOWN_QRELS] == 1
    path.unlink()  # no .trec: golden_docs_pids
    task = load_task("coral", data_dir=root)
    assert task.queries[3].qrels == {"20": 1}
    assert task.warnings["qrels taken from golden_docs_pids (no .trec file)"] == 9


def test_hub_unreachable_is_one_clear_error(monkeypatch):
    import mtrbench.data.hub as hub

    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    with pytest.raises(MtrbenchError, match=r"ariya2357/CORAL.*--data-dir") as info:
        load_task("coral")
    assert "\n" not in str(info.value)


# ----------------------------------------------------------------------------------- end to end
@pytest.mark.slow
def test_cli_eval(coral, tmp_path):
    proc = run_cli(
        "eval",
        "--task",
        "coral",
        "--data-dir",
        str(coral),
        "--model",
        "minilm",
        "--quiet",
        "--output-dir",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(next(tmp_path.rglob("coral.json")).read_text())
    scores = doc["scores"]["test"][0]
    assert scores["main_score"] == scores["mrr_at_100"] and 0 < scores["main_score"] <= 1
    assert doc["mtrbench"]["queries"]["total"] == doc["mtrbench"]["queries"]["evaluated"] == 9
    assert doc["mtrbench"]["corpus_size"] == 40
