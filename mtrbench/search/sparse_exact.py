"""Exact top-k by sparse dot product between CSR query vectors and CSR document vectors, in bounded memory.

Term at a time: the document matrix is transposed once into an inverted matrix (``by_term``: one row of
postings per vocabulary term, ``inverted(docs)``), and each query adds its terms' postings, weighted, into one
float32 accumulator over the documents. Memory is the two sparse matrices, one accumulator of ``n_docs`` floats
and one posting list at a time: no ``n x vocabulary`` dense matrix is ever built. (A first version multiplied
document shards by query blocks, doc at a time: at a million passages it was 20 times slower, as
benchmarks/sparse_search.py showed.)

Ranking rule, as in ``search.topk``: higher score first, equal scores by lower corpus position. Documents that
share no term with a query score exactly 0 and are not returned (an inverted index never sees them).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from mtrbench.search.hits import Hits


def inverted(docs: sp.csr_matrix) -> sp.csr_matrix:
    """The vocabulary x documents matrix: each term's postings, by document position."""
    by_term = docs.T.tocsr()
    by_term.sort_indices()
    return by_term


def top_of(scores: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The best ``k`` (score, id) pairs under the ranking rule, best first."""
    if k <= 0 or scores.size == 0:
        return scores[:0], ids[:0]
    if scores.size > k:
        kth = np.partition(scores, scores.size - k)[scores.size - k]
        above = scores > kth
        tied = np.flatnonzero(scores == kth)
        tied = tied[np.argsort(ids[tied], kind="stable")][: k - int(above.sum())]
        chosen = np.concatenate([np.flatnonzero(above), tied])
        scores, ids = scores[chosen], ids[chosen]
    order = np.lexsort((ids, -scores))
    return scores[order], ids[order]


def sparse_search(
    queries: sp.csr_matrix,
    docs: sp.csr_matrix,
    top_k: int,
    candidates: list[list[int] | None] | None = None,
    by_term: sp.csr_matrix | None = None,
) -> Hits:
    """Top-k documents by sparse dot product for each query row; ``candidates[i]`` restricts query i's pool.
    ``by_term``: ``inverted(docs)``, built here when not given (a retriever builds it once per corpus)."""
    if queries.shape[1] != docs.shape[1]:
        raise ValueError(f"query vocabulary {queries.shape[1]} != document vocabulary {docs.shape[1]}")
    hits: Hits = [([], []) for _ in range(queries.shape[0])]
    free = [i for i in range(queries.shape[0]) if candidates is None or candidates[i] is None]
    if free:
        by_term = inverted(docs) if by_term is None else by_term
        scores = np.zeros(docs.shape[0], dtype=np.float32)
        for i in free:
            hits[i] = _term_at_a_time(queries, i, by_term, scores, top_k)
    for i, pool in enumerate(candidates or []):
        if pool is not None:
            hits[i] = score_pool(queries[i], docs, np.asarray(pool, dtype=np.int64), top_k) if pool else ([], [])
    return hits


def _term_at_a_time(
    queries: sp.csr_matrix, row: int, by_term: sp.csr_matrix, scores: np.ndarray, top_k: int
) -> tuple[list[int], list[float]]:
    """One query's top-k; ``scores`` is the reusable accumulator, all zero on entry and on return."""
    lo, hi = queries.indptr[row], queries.indptr[row + 1]
    for term, weight in zip(queries.indices[lo:hi], queries.data[lo:hi]):
        start, end = by_term.indptr[term], by_term.indptr[term + 1]
        postings = by_term.indices[start:end]  # distinct within a term, so += adds each once
        scores[postings] += by_term.data[start:end] * weight
    top_s, top_i = _top_of_accumulator(scores, top_k)
    scores.fill(0)
    return top_i.tolist(), top_s.astype(float).tolist()


def _top_of_accumulator(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``top_of`` over every document's score, without gathering the non-zero ones first: one partition and
    two comparisons over the accumulator (ids come out ascending, so ties at the k-th place keep the lowest)."""
    if k < 1:
        return scores[:0], np.zeros(0, dtype=np.int64)
    if k < scores.size:
        kth = np.partition(scores, scores.size - k)[scores.size - k]
        if kth > 0:  # else fewer than k positive scores (or negative weights): the general path below
            above = np.flatnonzero(scores > kth)
            tied = np.flatnonzero(scores == kth)[: k - above.size]
            ids = np.concatenate([above, tied])
            order = np.lexsort((ids, -scores[ids]))
            return scores[ids][order], ids[order].astype(np.int64)
    ids = np.flatnonzero(scores)
    return top_of(scores[ids], ids.astype(np.int64), k)


def score_pool(query: sp.csr_matrix, docs: sp.csr_matrix, ids: np.ndarray, top_k: int) -> tuple[list[int], list[float]]:
    """One query row against the documents ``ids`` only: the best ``top_k`` of those with a non-zero score."""
    weights = np.zeros(docs.shape[1], dtype=np.float32)  # one vocabulary-wide query vector, never one per document
    weights[query.indices] = query.data
    scores = docs[ids] @ weights
    keep = scores != 0
    top_s, top_i = top_of(scores[keep], ids[keep], top_k)
    return top_i.tolist(), top_s.astype(float).tolist()
