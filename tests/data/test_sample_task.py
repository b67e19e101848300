"""The embedded sample is what the README promises, and it ranks strategies the way its design says."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from mtrbench.data import load_task
from mtrbench.data.cards import get_card

SAMPLE = Path(get_card("mtrbench-sample").local_path())


def _jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_sample_shape_from_raw_files():
    corpus = _jsonl(SAMPLE / "corpus.jsonl")
    conversations = _jsonl(SAMPLE / "conversations/test.jsonl")
    ids = {d["_id"] for d in corpus}
    assert len(ids) == len(corpus) >= 300
    lengths = [len(d["text"]) for d in corpus]
    assert 850 <= statistics.mean(lengths) <= 1200 and min(lengths) >= 750
    assert len(conversations) >= 30
    for conv in conversations:
        users = [m for m in conv["messages"] if m["role"] == "user"]
        assert len(users) >= 5, conv["conversation_id"]
        assert 1 <= conv["switch_turn"] < len(users), conv["conversation_id"]  # a hard topic switch inside
        assert len(set(conv["topics"])) == 2
        for m in users:
            assert m["content"].strip() and m["rewrite"].strip()
            assert m["qrels"] and all(q["doc_id"] in ids for q in m["qrels"])


def test_sample_loads_to_the_same_counts():
    raw = _jsonl(SAMPLE / "conversations/test.jsonl")
    task = load_task("mtrbench-sample")
    assert len(task.queries) == sum(1 for c in raw for m in c["messages"] if m["role"] == "user")
    assert len(task.corpus) == len(_jsonl(SAMPLE / "corpus.jsonl"))
    assert not task.warnings


@pytest.fixture(scope="module")
def sample_results(tmp_path_factory):
    from mtrbench.pipeline.evaluate import EvalConfig, run_eval
    from mtrbench.retrieve import RetrieverOptions

    out = tmp_path_factory.mktemp("results")
    config = EvalConfig(histories=["current", "questions", "rewrite"], output_dir=out)
    return {
        r.history: r
        for r in run_eval("minilm", "mtrbench-sample", config, RetrieverOptions.of(device="cpu", show_progress=False))
    }


def _follow_ups(result, task, after_switch: bool):
    qids = [
        q.qid
        for q in task.queries
        if q.turn_id not in (1, q.meta["switch_turn"] + 1) and q.meta["after_switch"] == after_switch
    ]
    values = result.per_query_values()
    kept = [values[qid]["ndcg_at_10"] for qid in qids if qid in values]
    return sum(kept) / len(kept)


@pytest.mark.slow
def test_sample_ranks_strategies_sensibly(sample_results):
    task = load_task("mtrbench-sample")
    current, questions, rewrite = (sample_results[h] for h in ("current", "questions", "rewrite"))
    # the gold rewrite is the ceiling
    assert rewrite.scores["ndcg_at_10"] > max(current.scores["ndcg_at_10"], questions.scores["ndcg_at_10"])
    # follow-ups of the first topic need their history: the question alone is ambiguous
    assert _follow_ups(questions, task, False) > _follow_ups(current, task, False)
    # and the first turn, which names its entity, is easy for everyone
    assert current.breakdowns["turn"]["1"]["ndcg_at_10"] > 0.7
    assert rewrite.n_evaluated == len(task.queries)
