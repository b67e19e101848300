"""Exact search equals brute force; candidate pools restrict it."""

from __future__ import annotations

import numpy as np
import torch

from mtrbench.search.exact import exact_search


def test_chunked_topk_equals_bruteforce():
    gen = torch.Generator().manual_seed(0)
    docs = torch.randn(1000, 16, generator=gen)
    queries = torch.randn(37, 16, generator=gen)
    hits = exact_search(queries, docs, top_k=25, query_chunk=8, doc_chunk=64)
    scores = queries.numpy() @ docs.numpy().T
    for i, (ids, s) in enumerate(hits):
        expected = np.argsort(-scores[i])[:25]
        assert ids == expected.tolist()
        np.testing.assert_allclose(s, scores[i][expected], rtol=1e-5)


def test_top_k_larger_than_corpus_and_pools():
    docs = torch.eye(4)
    queries = torch.tensor([[0.0, 1.0, 0.5, 0.0], [1.0, 0.0, 0.0, 0.2]])
    hits = exact_search(queries, docs, top_k=10)
    assert hits[0][0] == [1, 2, 0, 3] or hits[0][0][:2] == [1, 2]
    assert len(hits[0][0]) == 4
    pooled = exact_search(queries, docs, top_k=10, candidates=[[0, 2], None])
    assert pooled[0][0] == [2, 0]
    assert pooled[1][0][:2] == [0, 3]
    empty = exact_search(queries, docs, top_k=3, candidates=[[], [3]])
    assert empty[0] == ([], []) and empty[1][0] == [3]
