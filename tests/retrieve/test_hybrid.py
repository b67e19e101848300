"""Hybrid dense + BM25 retrieval: the documented normalization and weighting, and its two limits."""

from __future__ import annotations

import json
import re

import pytest

from mtrbench.cli import main
from mtrbench.formats.run import ranked
from mtrbench.infra.errors import MtrbenchError
from mtrbench.retrieve import build_retriever, resolve_model
from mtrbench.retrieve.hybrid import HybridRetriever


class _Leg:
    """A stand-in leg returning fixed hits."""

    tokenizer = None
    max_length = None
    query_prompt = ""
    revision = "r"

    def __init__(self, name, hits):
        self.name, self.hits, self.asked = name, hits, []

    def settings(self):
        return {"kind": self.name}

    def index(self, corpus):
        pass

    def search(self, queries, top_k, candidates=None):
        self.asked.append(top_k)
        return [(docs[:top_k], scores[:top_k]) for docs, scores in self.hits]


class _Corpus:
    ids = ["d0", "d1", "d2", "d3", "d4"]


def test_scores_match_hand_computation():
    dense = _Leg("dense", [([0, 1, 2], [0.9, 0.7, 0.4])])
    sparse = _Leg("bm25", [([3, 1], [12.0, 4.0])])
    hybrid = HybridRetriever(dense, sparse, alpha=0.7)
    hybrid.index(_Corpus())
    ((docs, scores),) = hybrid.search(["q"], top_k=10)
    # min-max per leg: dense 0.9->1, 0.7->0.6, 0.4->0; bm25 12->1, 4->0; a document missing from a leg gets 0
    expected = {0: 0.7 * 1.0, 1: 0.7 * 0.6 + 0.3 * 0.0, 2: 0.0, 3: 0.3 * 1.0}
    assert dict(zip(docs, scores)) == pytest.approx(expected)
    assert docs == [0, 1, 3, 2]
    assert dense.asked == sparse.asked == [100]  # each leg: max(top_k, 100) candidates, cut only after the union
    assert hybrid.search(["q"], top_k=2)[0][0] == [0, 1]
    assert HybridRetriever(dense, sparse, candidate_k=2).legs_k(10) == 2


def test_one_candidate_leg_counts_as_its_best():
    hybrid = HybridRetriever(_Leg("dense", [([0, 1], [0.5, 0.1])]), _Leg("bm25", [([1], [3.0])]), alpha=0.5)
    hybrid.index(_Corpus())
    ((docs, scores),) = hybrid.search(["q"], top_k=5)
    assert dict(zip(docs, scores)) == pytest.approx({0: 0.5, 1: 0.5})


@pytest.mark.parametrize(
    "name,needle",
    [
        ("hybrid:minilm", "hybrid:DENSE+bm25"),
        ("hybrid:bm25+bm25", "dense model"),
        ("hybrid:minilm+splade", "hybrid:DENSE+bm25"),
    ],
)
def test_bad_hybrid_names(name, needle):
    with pytest.raises(MtrbenchError, match=re.escape(needle)):
        resolve_model(name)


def test_alpha_needs_a_hybrid_model():
    with pytest.raises(MtrbenchError, match="hybrid models"):
        build_retriever("bm25", alpha=0.5)
    with pytest.raises(MtrbenchError, match=r"\[0, 1\]"):
        HybridRetriever(_Leg("d", []), _Leg("s", []), alpha=1.5)


@pytest.fixture(scope="module")
def sample_legs(minilm):
    from mtrbench.data import load_task
    from mtrbench.serialize.history import QueryFormat, get_strategy

    task = load_task("mtrbench-sample")
    bm25 = build_retriever("bm25", show_progress=False)
    minilm.index(task.corpus)
    bm25.index(task.corpus)
    current = get_strategy("current")
    texts = [current(q, QueryFormat()).text() for q in task.queries]
    return task, minilm, bm25, texts


def _top(task, hits, k):
    ids = task.corpus.ids
    return [[d for d, _ in ranked({ids[i]: s for i, s in zip(*h)})[:k]] for h in hits]


@pytest.mark.slow  # both cases share the module fixture that encodes the sample corpus (about 60 s)
@pytest.mark.parametrize("alpha,leg", [(1.0, "dense"), (0.0, "bm25")])
def test_alpha_limits_equal_each_leg(sample_legs, alpha, leg):
    task, dense, bm25, texts = sample_legs
    k = 10
    hybrid = HybridRetriever(dense, bm25, alpha=alpha)
    hybrid._ids = task.corpus.ids  # the legs are indexed already
    got = _top(task, hybrid.search(texts, k), k)
    alone = (dense if leg == "dense" else bm25).search(texts, hybrid.legs_k(k))
    want = _top(task, alone, k)
    # a leg weighted 0 adds no candidates, so the ranking is the other leg's, exactly, on every query
    assert got == want
    # at eval's default --top-k 100 each leg is asked for 100, so the hybrid run is the leg's run, whole
    full = hybrid.legs_k(100)
    assert _top(task, hybrid.search(texts, full), full) == _top(task, alone, full)


@pytest.mark.slow  # eval on the sample: the first MiniLM encoding of its corpus when run alone
def test_eval_records_hybrid_settings(tmp_path):
    assert (
        main(
            [
                "eval",
                "--model",
                "hybrid:minilm+bm25",
                "--alpha",
                "0.7",
                "--history",
                "current",
                "--top-k",
                "20",
                "--k",
                "1,5,10,20",
                "--device",
                "cpu",
                "--quiet",
                "--output-dir",
                str(tmp_path),
            ]
        )
        == 0
    )
    (path,) = tmp_path.rglob("mtrbench-sample.json")
    assert "alpha=0.7" in str(path) and path.parent.parent.name == "experiments"
    doc = json.loads(path.read_text())["mtrbench"]
    retriever = doc["settings"]["retriever"]
    assert retriever["kind"] == "hybrid" and retriever["alpha"] == 0.7 and retriever["candidate_k"] is None
    assert "min-max" in retriever["normalization"] and retriever["dense"]["kind"] == "dense"
    assert retriever["sparse"]["kind"] == "sparse"
    assert doc["settings"]["pipeline"] == {"alpha": 0.7, "candk": None}
    ndcg = json.loads(path.read_text())["scores"]["test"][0]["ndcg_at_10"]
    print(f"hybrid alpha=0.7 nDCG@10 {ndcg:.4f}")
    assert main(["eval", "--model", "bm25", "--alpha", "0.5", "--output-dir", str(tmp_path)]) == 2
