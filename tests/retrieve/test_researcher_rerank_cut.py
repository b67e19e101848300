"""--rerank cuts the first stage at --rerank-k in the order its run file lists the documents (trec_eval's: score
descending, ties by document id descending), so a rerank is reproduced from the first-stage run file."""

from __future__ import annotations

import sys
import types

from mtrbench.data.model import Corpus
from mtrbench.formats.run import format_run

# Corpus positions 0-5. The searchers break ties by lower position (a-1 first among the four tied at 0.5); a run
# file lists tied documents by id descending: d-4, c-3, b-2, a-1.
IDS = ["x-0", "a-1", "b-2", "c-3", "d-4", "e-5"]
FIRST = ([0, 1, 2, 3, 4], [0.9, 0.5, 0.5, 0.5, 0.5])  # best first in the searcher's order: ties by position


class FirstStage:
    name, revision, tokenizer, max_length, query_prompt = "first", "r", None, None, None

    def index(self, corpus):
        pass

    def search(self, queries, top_k, candidates=None):
        return [(FIRST[0][:top_k], FIRST[1][:top_k]) for _ in queries]


class FakeCrossEncoder:
    """Scores a passage by the number in its text; remembers what it was asked."""

    asked: list[str] = []

    def __init__(self, *args, **kwargs):
        pass

    def predict(self, pairs, **kwargs):
        FakeCrossEncoder.asked = [text for _, text in pairs]
        return types.SimpleNamespace(tolist=lambda: [float(text.split()[-1]) for _, text in pairs])


def _reranker(monkeypatch, rerank_k):
    monkeypatch.setitem(sys.modules, "sentence_transformers", types.SimpleNamespace(CrossEncoder=FakeCrossEncoder))
    monkeypatch.setattr("mtrbench.models.loading.hub_reachable", lambda: False)
    from mtrbench.retrieve.rerank import CrossEncoderReranker

    reranker = CrossEncoderReranker(FirstStage(), "some/cross-encoder", rerank_k=rerank_k, show_progress=False)
    # passage i's cross-encoder score is 10 * i: reranking reverses the positions
    reranker.index(Corpus(ids=IDS, titles=[""] * 6, texts=[f"passage {10 * i}" for i in range(6)]))
    return reranker


def test_the_candidates_are_the_top_of_the_first_stage_run_file(monkeypatch):
    rerank_k = 2
    reranker = _reranker(monkeypatch, rerank_k)
    [(docs, scores)] = reranker.search(["q"], top_k=5)

    first_run = {"q": {IDS[d]: s for d, s in zip(*FIRST)}}
    file_order = [line.split()[2] for line in format_run(first_run, "first").splitlines()]
    assert file_order == ["x-0", "d-4", "c-3", "b-2", "a-1"]  # trec_eval's order, by hand
    candidates = {IDS[int(text.split()[-1]) // 10] for text in FakeCrossEncoder.asked}
    assert candidates == set(file_order[:rerank_k]) == {"x-0", "d-4"}
    # reranked: d-4 (40) over x-0 (0); below rerank_k, the file's order: c-3, b-2, a-1
    assert [IDS[d] for d in docs] == ["d-4", "x-0", "c-3", "b-2", "a-1"]
    assert scores == [40.0, 0.0, -1.0, -2.0, -3.0]
