"""Exact sparse-dot search and the seismic index against scores scipy computes directly, on random SPLADE-shaped
matrices; the ranking rule on deliberate ties; bounded memory (no n x vocabulary dense matrix)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from mtrbench.infra.errors import UserInputError
from mtrbench.search.inverted import InvertedSpec, SeismicSearcher
from mtrbench.search.sparse_exact import inverted, sparse_search

VOCAB = 30522


def random_sparse(rows: int, per_row: int, seed: int, vocab: int = VOCAB) -> sp.csr_matrix:
    """Skewed term ids (a few frequent terms, many rare ones) with positive weights, duplicates summed."""
    rng = np.random.default_rng(seed)
    terms = np.minimum((rng.pareto(1.0, size=(rows, per_row)) * 50).astype(np.int64), vocab - 1)
    weights = rng.lognormal(-0.5, 0.6, size=(rows, per_row)).astype(np.float32)
    matrix = sp.csr_matrix(
        (weights.ravel(), (np.repeat(np.arange(rows), per_row), terms.ravel())), shape=(rows, vocab), dtype=np.float32
    )
    matrix.sum_duplicates()
    return matrix


def reference_top(queries: sp.csr_matrix, docs: sp.csr_matrix, k: int) -> list[tuple[list[int], list[float]]]:
    """By the rule, from scipy's full score matrix: non-zero scores, higher first, ties by lower position."""
    full = (queries @ docs.T).toarray()
    hits = []
    for row in full:
        ids = np.flatnonzero(row)
        order = sorted(ids, key=lambda i: (-row[i], i))[:k]
        hits.append((list(order), [float(row[i]) for i in order]))
    return hits


def assert_same(hits, expected) -> None:
    assert [h[0] for h in hits] == [e[0] for e in expected]
    for (_, scores), (_, want) in zip(hits, expected):
        assert scores == pytest.approx(want, rel=1e-6, abs=1e-6)


@pytest.fixture(scope="module")
def data():
    return random_sparse(40, 6, seed=1), random_sparse(1500, 40, seed=2)


def test_exact_equals_scipy(data):
    queries, docs = data
    expected = reference_top(queries, docs, 25)
    assert_same(sparse_search(queries, docs, 25), expected)
    assert_same(sparse_search(queries, docs, 25, by_term=inverted(docs)), expected)  # built once, reused
    assert_same(sparse_search(queries, docs, 1500), reference_top(queries, docs, 1500))  # every scoring document


def test_ties_rank_by_corpus_position():
    docs = sp.csr_matrix(np.array([[0, 1.0], [2.0, 0], [0, 1.0], [0, 1.0], [0, 0], [2.0, 0]], dtype=np.float32))
    query = sp.csr_matrix(np.array([[1.0, 2.0]], dtype=np.float32))
    ((ids, scores),) = sparse_search(query, docs, 3)
    assert ids == [0, 1, 2] and scores == [2.0, 2.0, 2.0]  # five tied at 2.0; document 4 shares no term
    ((ids, _),) = sparse_search(query, docs, 10)
    assert ids == [0, 1, 2, 3, 5]


def test_candidate_pools_restrict_each_query(data):
    queries, docs = data
    full = (queries @ docs.T).toarray()
    pools: list[list[int] | None] = [None] * queries.shape[0]
    pools[0], pools[1] = [5, 17, 1499, 40, 41, 42], []
    hits = sparse_search(queries, docs, 3, pools)
    ids, scores = hits[0]
    want = sorted((i for i in pools[0] if full[0, i] != 0), key=lambda i: (-full[0, i], i))[:3]
    assert ids == want and scores == pytest.approx([full[0, i] for i in want], rel=1e-6)
    assert hits[1] == ([], [])
    assert hits[2][0] == reference_top(queries[2], docs, 3)[0][0]  # no pool: the whole corpus


def test_search_never_builds_a_dense_documents_x_vocabulary_matrix(monkeypatch):
    import torch

    queries, docs = random_sparse(16, 30, seed=3), random_sparse(20_000, 120, seed=4)
    expected = reference_top(queries, docs[:500], 5)  # the reference may densify; the search below may not

    def refuse(*args, **kwargs):
        raise AssertionError("search densified a sparse matrix")

    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array, sp.coo_array):
        monkeypatch.setattr(cls, "toarray", refuse)
        monkeypatch.setattr(cls, "todense", refuse)
    monkeypatch.setattr(torch.Tensor, "to_dense", refuse)
    assert_same(sparse_search(queries, docs[:500], 5), expected)
    tracemalloc.start()
    try:
        sparse_search(queries, docs, 10)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    dense_bytes = docs.shape[0] * VOCAB * 4  # 2.4 GB
    assert peak < 40 * 2**20 < dense_bytes / 50, peak  # the inverted copy (about 17 MB) and one accumulator


def test_seismic_at_exhaustive_settings_equals_exact(data):
    queries, docs = data
    index = SeismicSearcher(InvertedSpec.parse("seismic:exhaustive"), docs)
    assert_same(index.search(queries, 25), reference_top(queries, docs, 25))
    settings = index.settings()
    assert settings["index"] == "seismic:exhaustive" and settings["approximate"] is False
    assert settings["n_postings"] == docs.shape[0] and settings["heap_factor"] == 0


def test_seismic_approximate_scores_are_exact_dot_products(data):
    queries, docs = data
    index = SeismicSearcher(InvertedSpec.parse("seismic:query_cut=2,heap_factor=0.5,k_factor=1"), docs)
    full = (queries @ docs.T).toarray()
    found = index.search(queries, 10)
    assert any(ids for ids, _ in found)
    for q, (ids, scores) in enumerate(found):
        assert scores == pytest.approx([full[q, i] for i in ids], rel=1e-6)  # rescored, not seismic's fp16
        assert scores == sorted(scores, reverse=True)
    assert index.settings()["approximate"] is True and index.settings()["query_cut"] == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("faiss:hnsw", "a learned sparse model takes"),
        ("seismic:nprobe=3", "not 'nprobe'"),
        ("seismic:query_cut=0", "query_cut must be an integer >= 1"),
        ("seismic:heap_factor=x", "heap_factor must be a number >= 0"),
        ("seismic:summary_energy=2", "summary_energy must be a positive number"),
    ],
)
def test_index_spec_errors_name_the_flag(text, message):
    with pytest.raises(UserInputError, match="--index") as caught:
        InvertedSpec.parse(text)
    assert message in str(caught.value)


def test_index_spec_describes_what_it_was_given():
    assert InvertedSpec.parse(None).describe() == "exact" and not InvertedSpec.parse("exact").approximate
    assert InvertedSpec.parse("seismic").describe() == "seismic"
    spec = InvertedSpec.parse("seismic:heap_factor=0.8,query_cut=12")
    assert spec.describe() == "seismic:heap_factor=0.8,query_cut=12"
    assert spec.values(100, VOCAB)["query_cut"] == 12 and spec.values(100, VOCAB)["n_postings"] == 4000
