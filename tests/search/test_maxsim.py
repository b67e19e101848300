"""Exact MaxSim and the voyager token index against sentence-transformers' own ``maxsim`` on ragged random token
vectors (passages stored fp16, as the token store keeps them)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sentence_transformers.util.similarity import maxsim

from mtrbench.encode.token_store import TokenMatrix
from mtrbench.infra.errors import UserInputError
from mtrbench.search import maxsim as maxsim_module
from mtrbench.search.maxsim import QueryTokens, maxsim_rerank, maxsim_search, score_passages
from mtrbench.search.token_index import TokenIndexSpec, VoyagerTokenIndex

TOL = 1e-5


def _unit(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.normalize(x, dim=-1)


@pytest.fixture(scope="module")
def data():
    generator = torch.Generator().manual_seed(0)
    queries = [
        _unit(torch.randn(int(n), 16, generator=generator)) for n in torch.randint(3, 12, (25,), generator=generator)
    ]
    docs = [
        _unit(torch.randn(int(n), 16, generator=generator)) for n in torch.randint(1, 40, (160,), generator=generator)
    ]
    # query 0 in the positive orthant, passage 7 in the negative one: every dot product is negative, so its
    # MaxSim is below zero; a padded position scored as a zero vector would lift it to 0
    queries[0] = _unit(torch.randn(5, 16, generator=generator).abs())
    docs[7] = -_unit(torch.randn(3, 16, generator=generator).abs())
    matrix = TokenMatrix.from_tensors(docs)
    stored = [d.half().float() for d in docs]
    return queries, matrix, stored


def test_scores_equal_sentence_transformers_maxsim(data):
    queries, matrix, stored = data
    expected = maxsim(queries, stored)
    got = score_passages(QueryTokens.of(queries), matrix, np.arange(matrix.n_docs))
    assert float(expected[0, 7]) < 0
    torch.testing.assert_close(got, expected, atol=TOL, rtol=0)
    normalized = score_passages(QueryTokens.of(queries), matrix, np.arange(matrix.n_docs), length_normalize=True)
    torch.testing.assert_close(normalized, maxsim(queries, stored, length_normalize=True), atol=TOL, rtol=0)


def test_full_search_in_blocks_is_the_exact_top_k(data, monkeypatch):
    queries, matrix, stored = data
    expected = maxsim(queries, stored)
    monkeypatch.setattr(maxsim_module, "QUERY_TOKENS_PER_CHUNK", 80)  # several query chunks
    scores, ids = maxsim_search(QueryTokens.of(queries), matrix, 10, block_elements=30_000)  # many passage blocks
    top = expected.topk(10, dim=1)
    torch.testing.assert_close(scores, top.values, atol=TOL, rtol=0)
    assert torch.equal(ids, top.indices)


def test_rerank_scores_each_querys_own_pool(data):
    queries, matrix, stored = data
    expected = maxsim(queries, stored)
    pools = [[(q * 7 + i * 13) % matrix.n_docs for i in range(30)] + [q] for q in range(len(queries))]
    pools[3] = []
    hits = maxsim_rerank(QueryTokens.of(queries), matrix, pools, 5, block_elements=500)
    assert hits[3] == ([], [])
    for q, (docs, scores) in enumerate(hits):
        if q == 3:
            continue
        pool = sorted(set(pools[q]))
        best = expected[q][pool].topk(5)
        assert docs == [pool[i] for i in best.indices.tolist()]
        assert scores == pytest.approx(best.values.tolist(), abs=TOL)


def test_equal_scores_rank_by_corpus_position():
    query = [_unit(torch.ones(2, 4))]
    same = _unit(torch.tensor([[1.0, 0.5, 0.0, 0.0]]))
    matrix = TokenMatrix.from_tensors([_unit(torch.tensor([[0.0, 0.0, 1.0, 0.0]])), same, same, same])
    _, ids = maxsim_search(QueryTokens.of(query), matrix, 2, block_elements=1)
    assert ids.tolist() == [[1, 2]]


def test_store_size_per_passage_by_hand():
    matrix = TokenMatrix.from_tensors([torch.zeros(3, 8), torch.zeros(5, 8)])
    assert matrix.offsets.tolist() == [0, 3, 8] and matrix.vectors.dtype == np.float16
    assert matrix.bytes_per_passage() == (8 * 8 * 2 + 3 * 8) / 2


def test_index_spec_parsing():
    spec = TokenIndexSpec.parse("voyager:k_tokens=64,m=8")
    assert spec.params["k_tokens"] == 64 and spec.params["m"] == 8 and spec.params["ef"] >= 64
    assert TokenIndexSpec.parse(None).describe() == "exact" and not TokenIndexSpec.parse("exact").approximate
    with pytest.raises(UserInputError, match="faiss indexes single vectors"):
        TokenIndexSpec.parse("faiss:hnsw")
    with pytest.raises(UserInputError, match="unknown parameter 'nprobe'"):
        TokenIndexSpec.parse("voyager:nprobe=3")
    with pytest.raises(UserInputError, match="positive integer"):
        TokenIndexSpec.parse("voyager:k_tokens=١")
    with pytest.raises(UserInputError, match="storage"):
        TokenIndexSpec.parse("voyager:storage=int4")


def test_a_graph_that_cannot_reach_k_tokens_is_one_error_line():
    from mtrbench.infra.errors import MtrbenchError

    generator = torch.Generator().manual_seed(1)
    matrix = TokenMatrix.from_tensors([_unit(torch.randn(50, 8, generator=generator)) for _ in range(40)])
    index = VoyagerTokenIndex(TokenIndexSpec.parse("voyager:m=2,ef_construction=2"), matrix)
    queries = QueryTokens.of([_unit(torch.randn(4, 8, generator=generator))])
    with pytest.raises(MtrbenchError, match="reached fewer than k_tokens=2000"):
        index.searching(k_tokens=2000, ef=2000).search(queries, 5)


def test_voyager_index_exhaustive_is_exact_and_scores_are_always_exact(data):
    queries, matrix, stored = data
    expected = maxsim(queries, stored)
    index = VoyagerTokenIndex(TokenIndexSpec.parse("voyager:k_tokens=4,ef=16"), matrix)
    encoded = QueryTokens.of(queries)
    for q, (docs, scores) in enumerate(index.search(encoded, 10)):
        assert scores == pytest.approx(expected[q][docs].tolist(), abs=TOL)  # the index picks, MaxSim scores
    exhaustive = index.searching(k_tokens=matrix.n_tokens, ef=matrix.n_tokens)
    top = expected.topk(10, dim=1)
    for q, (docs, scores) in enumerate(exhaustive.search(encoded, 10)):
        assert docs == top.indices[q].tolist()
        assert scores == pytest.approx(top.values[q].tolist(), abs=TOL)
