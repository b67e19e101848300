"""`tasks show --stats` and `export` (BEIR round trip, HF datasets)."""

from __future__ import annotations

import json
import shutil

import datasets
import pytest
import yaml
from cli_run import run_cli

from mtrbench.data import load_task


def test_stats_of_native_mini(native_mini):
    proc = run_cli("tasks", "show", str(native_mini), "--stats")
    assert proc.returncode == 0, proc.stderr
    stats = yaml.safe_load(proc.stdout)["stats"]  # the card's YAML followed by a `stats:` mapping
    assert stats["conversations"] == 1 and stats["turns"] == 5 and stats["corpus_size"] == 4
    assert stats["queries_without_gold"] == 1  # "thanks!"
    assert stats["conversations_with_topic_switch"] == 1
    # questions: 5, 4, 6, 4, 1 words
    assert stats["words_per_question"] == {"mean": 4.0, "median": 4, "min": 1, "max": 6}
    assert stats["relevant_per_query"]["max"] == 2


def test_export_beir_round_trip(native_mini, tmp_path):
    original = load_task(str(native_mini))
    proc = run_cli("export", str(native_mini), "--format", "beir", "--out", str(tmp_path / "beir"), "--truncate", "none")
    assert proc.returncode == 0, proc.stderr
    lines = (tmp_path / "beir/qrels/test.tsv").read_text().splitlines()
    assert lines[0] == "query-id\tcorpus-id\tscore" and "c1_4\torrin-design\t1" in lines
    again = load_task(str(tmp_path / "beir"))
    assert again.corpus.ids == original.corpus.ids and again.corpus.texts == original.corpus.texts
    by_qid = {q.qid: q for q in again.queries}
    for q in original.queries:
        if not q.qrels:  # BEIR keeps only queries with judgments
            assert q.qid not in by_qid
            continue
        r = by_qid[q.qid]
        assert (r.conversation_id, r.turn_id, r.history, r.query, r.gold_rewrite, r.answers, r.qrels) == (
            q.conversation_id,
            q.turn_id,
            q.history,
            q.query,
            q.gold_rewrite,
            q.answers,
            q.qrels,
        )
    # without the sidecar the query is its text: the conversation serialized as eval's default (full) does
    (tmp_path / "beir/conversations.jsonl").unlink()
    plain = {q.qid: q for q in load_task(str(tmp_path / "beir")).queries}
    assert plain["c1_4"].history == () and plain["c1_4"].query == (
        "User: How deep is Lake Varnholm?\nAgent: It is 212 metres deep.\nUser: any fish in it?\n"
        "Agent: Yes, the Varnholm char.\nUser: Who designed the Orrin Suspension Bridge?\nAgent: Hedda Lorne.\n"
        "User: when did it open?"
    )
    assert plain["c1_1"].query == "How deep is Lake Varnholm?"


def test_export_hf(native_mini, tmp_path):
    original = load_task(str(native_mini))
    proc = run_cli("export", str(native_mini), "--format", "hf", "--out", str(tmp_path / "hf"), "--truncate", "none")
    assert proc.returncode == 0, proc.stderr
    folder = str(tmp_path / "hf")
    conversations = datasets.load_dataset(folder, "conversations", split="test")
    corpus = datasets.load_dataset(folder, "corpus", split="corpus")
    qrels = datasets.load_dataset(folder, "qrels", split="test")
    assert len(conversations) == len(original.queries) and len(corpus) == len(original.corpus)
    row = conversations[3]
    assert row["_id"] == "c1_4" and row["query"] == "when did it open?"
    assert {d: g for q, d, g in zip(qrels["query-id"], qrels["corpus-id"], qrels["score"]) if q == "c1_4"} == {
        "orrin-open": 2,
        "orrin-design": 1,
    }
    assert row["meta"]["switch_turn"] == 2


@pytest.mark.slow
def test_hf_re_export_to_the_same_folder_never_loads_stale_rows(native_mini, tmp_path):
    """datasets caches a local folder's config under a key that survives rewriting a file in place; the export
    names its files by content so datasets (and mteb, which loads through it) sees the new rows."""
    changed = tmp_path / "changed"
    shutil.copytree(native_mini, changed)
    with (changed / "conversations" / "test.jsonl").open("a") as handle:
        handle.write(
            json.dumps(
                {
                    "conversation_id": "c2",
                    "messages": [
                        {
                            "role": "user",
                            "content": "When did the Orrin bridge open?",
                            "qrels": [{"doc_id": "orrin-open", "score": 1}],
                        }
                    ],
                }
            )
            + "\n"
        )
    out = tmp_path / "hf"
    for source, expected in ((native_mini, 5), (changed, 6)):
        proc = run_cli("export", str(source), "--format", "hf", "--out", str(out), "--truncate", "none")
        assert proc.returncode == 0, proc.stderr
        assert len(datasets.load_dataset(str(out), "conversations", split="test")) == expected
    assert len(list((out / "conversations").glob("*.parquet"))) == 1  # the older file is gone
