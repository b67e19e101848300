"""Parent-child retrieval: sentence windows as children, parents scored by their best child."""

from __future__ import annotations

import json

import pytest

from mtrbench.cli import main
from mtrbench.data.model import Corpus
from mtrbench.infra.errors import MtrbenchError
from mtrbench.retrieve.chunking import Chunking, ParentChildRetriever, child_corpus, split_sentences


def test_rule_based_splitter():
    text = (
        'Dr. Hedda Lorne designed it. It opened in 1931! Was it "the longest"? Yes. J. S. Bach wrote 3 works, '
        "e.g. the Mass. 1931 was a year."
    )
    assert split_sentences(text) == [
        "Dr. Hedda Lorne designed it.",
        "It opened in 1931!",
        'Was it "the longest"?',
        "Yes.",
        "J. S. Bach wrote 3 works, e.g. the Mass.",
        "1931 was a year.",
    ]


def test_windows_of_three_every_two():
    s = [f"S{i}." for i in range(6)]
    assert Chunking(3, 2).windows(s) == ["S0. S1. S2.", "S2. S3. S4.", "S4. S5."]
    assert Chunking(3, 2).windows(s[:5]) == ["S0. S1. S2.", "S2. S3. S4."]
    assert Chunking(3, 2).windows(s[:2]) == ["S0. S1."]
    assert Chunking.parse("sentences:3:2") == Chunking(3, 2)
    with pytest.raises(MtrbenchError, match="sentences:SIZE:STRIDE"):
        Chunking.parse("tokens:128")


class _Inner:
    tokenizer = None
    max_length = None
    query_prompt = ""
    name = "stub"
    revision = "r"

    def __init__(self, scores):
        self.scores = scores  # child id -> score

    def settings(self):
        return {"kind": "stub"}

    def index(self, corpus):
        self.corpus = corpus

    def search(self, queries, top_k, candidates=None):
        ranked = sorted(((self.corpus.position(c), s) for c, s in self.scores.items()), key=lambda x: -x[1])[:top_k]
        return [([c for c, _ in ranked], [s for _, s in ranked])] * len(queries)


def test_parents_take_their_best_child_score():
    corpus = Corpus(["a", "b"], ["", ""], ["A0. A1. A2. A3. A4.", "B0. B1."])
    children, parents = child_corpus(corpus, Chunking(3, 2))
    assert children.ids == ["a#0", "a#1", "b#0"] and parents == [0, 0, 1]
    retriever = ParentChildRetriever(_Inner({"a#0": 0.2, "a#1": 0.9, "b#0": 0.5}), Chunking(3, 2))
    retriever.index(corpus)
    assert retriever.search(["q"], top_k=10) == [([0, 1], [0.9, 0.5])]
    retriever = ParentChildRetriever(_Inner({"a#0": 0.2, "a#1": 0.9, "b#0": 0.5}), Chunking(3, 2), candidate_k=1)
    retriever.index(corpus)
    assert retriever.search(["q"], top_k=10) == [([0], [0.9])]  # one child retrieved: one parent


def test_eval_on_parent_qrels_with_bm25_children(tmp_path):
    from mtrbench.data import load_task
    from mtrbench.formats.run import read_run
    from mtrbench.retrieve import build_retriever
    from mtrbench.serialize.history import QueryFormat, get_strategy

    assert (
        main(
            [
                "eval",
                "--model",
                "bm25",
                "--chunking",
                "sentences:3:2",
                "--candidate-k",
                "50",
                "--top-k",
                "20",
                "--k",
                "1,5,10,20",
                "--history",
                "current",
                "--quiet",
                "--output-dir",
                str(tmp_path),
            ]
        )
        == 0
    )
    (path,) = tmp_path.rglob("mtrbench-sample.json")
    assert "chunking=sentences-3-2" in str(path) and "candk=50" in str(path)
    doc = json.loads(path.read_text())
    settings = doc["mtrbench"]["settings"]["retriever"]
    assert settings["kind"] == "parent-child" and settings["aggregation"] == "max child score"
    run = read_run(path.with_name("mtrbench-sample.run.trec"))

    task = load_task("mtrbench-sample")
    children, parents = child_corpus(task.corpus, Chunking(3, 2))
    assert settings["children"] == len(children) > len(task.corpus)
    bm25 = build_retriever("bm25", show_progress=False)
    bm25.index(children)
    current = get_strategy("current")
    hits = bm25.search([current(q, QueryFormat()).text() for q in task.queries], 50)
    for query, (found, scores) in zip(task.queries, hits):
        best: dict[str, float] = {}
        for child, score in zip(found, scores):
            parent = task.corpus.ids[parents[child]]
            best[parent] = max(best.get(parent, score), score)
        top = dict(sorted(best.items(), key=lambda item: (item[1], item[0]), reverse=True)[:20])
        assert run[query.qid] == pytest.approx(top, rel=1e-6), query.qid
    print(f"parent-child BM25 nDCG@10 {doc['scores']['test'][0]['ndcg_at_10']:.4f}, {len(children)} children")


def test_rank_parents_rescores_the_candidate_parents_on_their_own_text(tmp_path):
    """H-RAG's strategy 2: the parents of the retrieved children, scored by BM25 over the whole parents."""
    from mtrbench.data import load_task
    from mtrbench.formats.run import read_run
    from mtrbench.retrieve import build_retriever
    from mtrbench.serialize.history import QueryFormat, get_strategy

    assert (
        main(
            [
                "eval",
                "--model",
                "bm25",
                "--chunking",
                "sentences:3:2",
                "--candidate-k",
                "20",
                "--rank-parents",
                "--top-k",
                "10",
                "--k",
                "1,5,10",
                "--history",
                "current",
                "--quiet",
                "--output-dir",
                str(tmp_path),
            ]
        )
        == 0
    )
    (path,) = tmp_path.rglob("mtrbench-sample.json")
    assert "rankparents=True" in str(path)
    settings = json.loads(path.read_text())["mtrbench"]["settings"]["retriever"]
    assert settings["rank_parents"] is True and "own text" in settings["aggregation"]
    run = read_run(path.with_name("mtrbench-sample.run.trec"))

    task = load_task("mtrbench-sample")
    texts = [get_strategy("current")(q, QueryFormat()).text() for q in task.queries]
    children, parents = child_corpus(task.corpus, Chunking(3, 2))
    on_children, on_parents = build_retriever("bm25", show_progress=False), build_retriever("bm25", show_progress=False)
    on_children.index(children)
    on_parents.index(task.corpus)
    from_children = on_children.search(texts, 20)
    whole = on_parents.search(texts, len(task.corpus))  # every parent's own BM25 score
    changed = 0
    for query, (found, _), (all_parents, all_scores) in zip(task.queries, from_children, whole):
        candidates = {task.corpus.ids[parents[c]] for c in found}
        own = {task.corpus.ids[p]: s for p, s in zip(all_parents, all_scores) if task.corpus.ids[p] in candidates}
        got = run.get(query.qid, {})
        assert set(got) <= candidates  # never a parent no child led to
        # each written score is the parent's own BM25 score, and they are the best 10 among the candidates
        # (which of several parents tied at the 10th score is kept is BM25's cut, not checked here)
        assert all(got[doc] == pytest.approx(own[doc], rel=1e-6) for doc in got), query.qid
        assert sorted(got.values(), reverse=True) == pytest.approx(sorted(own.values(), reverse=True)[:10], rel=1e-6)
        changed += len(candidates) > 10
    assert changed > 0  # some queries had more candidates than the cut: the rescoring chose among them


def test_rank_parents_needs_chunking(capsys):
    assert main(["eval", "--model", "bm25", "--rank-parents", "--quiet"]) == 2
    assert capsys.readouterr().err.strip().startswith("error: --rank-parents")
