"""BEIR and native loaders, through datasets, with validation."""

from __future__ import annotations

import json
import shutil

import pytest

from mtrbench.data import load_task
from mtrbench.data.cards import all_cards, card_from_dict, get_card
from mtrbench.infra.errors import MtrbenchError


def test_native_loader(native_mini):
    task = load_task(str(native_mini))
    assert task.split == "test" and len(task.corpus) == 4
    assert [q.qid for q in task.queries] == ["c1_1", "c1_2", "c1_3", "c1_4", "c1_5"]
    q4 = task.queries[3]
    assert q4.turn_id == 4 and q4.conversation_id == "c1"
    assert [m.role for m in q4.history] == ["user", "assistant"] * 3
    assert q4.query == "when did it open?"
    assert q4.gold_rewrite == "When did the Orrin Suspension Bridge open?"
    assert q4.answers == ("In 1931.",)
    assert q4.qrels == {"orrin-open": 2, "orrin-design": 1}
    assert q4.meta["switch_turn"] == 2 and q4.meta["after_switch"] is True
    assert task.queries[1].meta["after_switch"] is False
    assert task.queries[4].qrels == {}  # "thanks!": no gold, kept, excluded later
    assert set(task.qrels()) == {"c1_1", "c1_2", "c1_3", "c1_4"}


def test_beir_fixture(shared):
    folder = shared / "datasets/fixtures/beir/mini"
    task = load_task(str(folder))
    qrel_qids = {line.split("\t")[0] for line in (folder / "qrels/test.tsv").read_text().splitlines()[1:] if line}
    assert {q.qid for q in task.queries} == qrel_qids
    n_docs = sum(1 for line in (folder / "corpus.jsonl").read_text().splitlines() if line.strip())
    assert len(task.corpus) == n_docs
    q1 = next(q for q in task.queries if q.qid == "q1")
    assert q1.query == "How deep is Lake Varnholm?" and q1.history == () and q1.qrels == {"varnholm_geo": 1}
    assert all(isinstance(d, str) for d in task.corpus.ids)


def _beir_folder(tmp_path, queries, qrels="query-id\tcorpus-id\tscore\nq1\t1\t1\n"):
    (tmp_path / "qrels").mkdir(parents=True, exist_ok=True)
    (tmp_path / "corpus.jsonl").write_text(
        json.dumps({"_id": 1, "title": "A", "text": "alpha"}) + "\n" + json.dumps({"_id": "2", "text": "beta"}) + "\n"
    )
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (tmp_path / "qrels/test.tsv").write_text(qrels)
    return tmp_path


def test_beir_conversational_query_text(tmp_path):
    folder = _beir_folder(
        tmp_path,
        [
            {
                "_id": "q1",
                "text": [
                    {"role": "user", "content": "tell me about alpha"},
                    {"role": "assistant", "content": "it is a letter"},
                    {"role": "user", "content": "and its successor?"},
                ],
            }
        ],
    )
    task = load_task(str(folder))
    q = task.queries[0]
    assert q.query == "and its successor?" and q.turn_id == 2
    assert [m.content for m in q.history] == ["tell me about alpha", "it is a letter"]
    assert task.corpus.ids == ["1", "2"]  # integer ids become strings


def test_qrels_naming_unknown_docs_are_counted(tmp_path):
    folder = _beir_folder(
        tmp_path,
        [{"_id": "q1", "text": "alpha?"}],
        qrels="query-id\tcorpus-id\tscore\nq1\t1\t1\nq1\tnope\t1\nq1\tnada\t2\n",
    )
    task = load_task(str(folder))
    assert task.queries[0].qrels == {"1": 1}
    assert task.warnings["qrels naming unknown documents (dropped)"] == 2


def test_duplicate_doc_ids_name_the_file(tmp_path):
    folder = _beir_folder(tmp_path, [{"_id": "q1", "text": "alpha?"}])
    with (folder / "corpus.jsonl").open("a") as handle:
        handle.write(json.dumps({"_id": "2", "text": "again"}) + "\n")
    with pytest.raises(MtrbenchError, match=r"corpus.*duplicate document id.*'2'"):
        load_task(str(folder))


def test_empty_current_question_is_an_error(tmp_path, native_mini):
    folder = tmp_path / "native"
    shutil.copytree(native_mini, folder)
    path = folder / "conversations/test.jsonl"
    path.write_text(path.read_text().replace('"content": "any fish in it?"', '"content": "  "'))
    with pytest.raises(MtrbenchError, match=r"c1_2.*empty current question"):
        load_task(str(folder))


def test_malformed_json_names_the_folder(tmp_path, native_mini):
    folder = tmp_path / "native"
    shutil.copytree(native_mini, folder)
    (folder / "corpus.jsonl").write_text('{"_id": "a", "text": "x"}\n{"_id": "b", "text": \n')
    with pytest.raises(MtrbenchError, match=str(folder)):
        load_task(str(folder))


def test_missing_qrels_split(shared):
    with pytest.raises(MtrbenchError, match="no split 'dev'"):
        load_task(str(shared / "datasets/fixtures/beir/mini"), split="dev")


def test_cards_load_and_validate():
    cards = all_cards()
    assert "mtrbench-sample" in cards
    with pytest.raises(MtrbenchError, match="unknown task card field"):
        card_from_dict(
            {
                "name": "x",
                "description": "",
                "format": "beir",
                "source": {"path": "."},
                "splits": ["test"],
                "eval_split": "test",
                "colour": "red",
            },
            "x.yaml",
        )
    with pytest.raises(MtrbenchError, match="eval_split 'dev'"):
        card_from_dict(
            {
                "name": "x",
                "description": "",
                "format": "beir",
                "source": {"path": "."},
                "splits": ["test"],
                "eval_split": "dev",
            },
            "x.yaml",
        )
    with pytest.raises(MtrbenchError, match="Did you mean: mtrbench-sample"):
        get_card("mtrbench-sampel")


def test_hub_source_offline_is_one_clear_error(monkeypatch):
    """A Hub-backed card with no network: fast, actionable, names the dataset and --data-dir."""
    import mtrbench.data.hub as hub

    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: False)
    card = card_from_dict(
        {
            "name": "remote",
            "description": "",
            "format": "mtrbench",
            "source": {"hub": "someorg/some-dataset", "revision": "0123456789abcdef"},
            "splits": ["test"],
            "eval_split": "test",
        },
        "remote.yaml",
    )
    with pytest.raises(MtrbenchError, match=r"someorg/some-dataset@0123456789abcdef.*--data-dir"):
        load_task(card)


ROWS = [
    {"_id": 7, "title": "Lake", "text": "deep water"},
    {"_id": 8, "title": None, "text": "a bridge"},
    {"_id": 9, "text": "twelve"},
]  # integer ids (Arrow keeps a column's type), a null title, a missing one


@pytest.mark.parametrize(
    "rows, by_rows, by_columns",
    [
        (
            [{"_id": "a", "text": "x"}, {"_id": None, "text": "y"}],
            "corpus record 1 has no '_id'",
            " record 1: no '_id'",
        ),
        (
            [{"_id": "a", "text": "x"}, {"_id": "b", "text": None}],
            "corpus record 'b' has no 'text'",
            " record 1 (b): no 'text'",
        ),
        ([{"doc": "a", "text": "x"}], "corpus record 0 has no '_id'", ": corpus needs column(s) ['_id']"),
        ([{"_id": "a", "body": "x"}], "corpus record 'a' has no 'text'", ": corpus needs column(s) ['text']"),
    ],
)
def test_corpus_from_a_dataset_is_read_by_column_with_the_same_checks(rows, by_rows, by_columns):
    """A datasets.Dataset takes the column path (a million rows in seconds, not a minute); it must give the
    corpus the row-by-row path gives, and refuse the same records, naming the file, record and field."""
    from datasets import Dataset

    from mtrbench.data.loaders.common import corpus_from_rows

    def error(source):
        with pytest.raises(MtrbenchError) as caught:
            corpus_from_rows(source, "corpus.jsonl")
        return str(caught.value)

    assert error(iter(rows)) == f"corpus.jsonl: {by_rows}"
    assert error(Dataset.from_list(rows)).startswith(f"corpus.jsonl{by_columns}")
    by_rows, by_columns = corpus_from_rows(iter(ROWS), "c"), corpus_from_rows(Dataset.from_list(ROWS), "c")
    assert (by_columns.ids, by_columns.titles, by_columns.texts) == (
        ["7", "8", "9"],
        ["Lake", "", ""],
        ["deep water", "a bridge", "twelve"],
    )
    assert (by_rows.ids, by_rows.titles, by_rows.texts) == (by_columns.ids, by_columns.titles, by_columns.texts)
    assert len(corpus_from_rows(Dataset.from_list([{"_id": "a", "text": "x"}]).select([]), "c")) == 0
