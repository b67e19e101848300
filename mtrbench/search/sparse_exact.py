"""Exact top-k by sparse dot product between CSR query vectors and CSR document vectors, in bounded memory.

Documents are scored shard by shard (contiguous row ranges of the document matrix) against a block of
queries at a time with one sparse x sparse product each; the product holds only the (document, query) pairs
that share a term, so peak memory is bounded by ``max_pairs`` pairs (about 12 bytes each) on top of the
matrices themselves. No ``n x vocabulary`` (nor ``queries x documents``) dense array is ever built.

Ranking rule, as in ``search.topk``: higher score first, equal scores by lower corpus position. Documents that
share no term with a query score exactly 0 and are not returned (an inverted index never sees them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from mtrbench.search.hits import Hits

DEFAULT_MAX_PAIRS = 4_000_000  # (document, query) pairs one product may hold: about 50 MB


@dataclass(frozen=True)
class SparseSearchLimits:
    """How the work is cut: queries per block, and the score pairs one shard x block product may hold."""

    query_block: int = 256
    max_pairs: int = DEFAULT_MAX_PAIRS

    def __post_init__(self) -> None:
        if self.query_block < 1 or self.max_pairs < 1:
            raise ValueError(f"invalid sparse search limits {self}")

    def shard_docs(self, block_queries: int) -> int:
        """Documents per shard so that even a product where every pair scores stays under ``max_pairs``."""
        return max(1, self.max_pairs // max(1, block_queries))


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


def _row_top(product: sp.csr_matrix, row: int, offset: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = product.indptr[row], product.indptr[row + 1]
    scores = product.data[lo:hi]
    ids = product.indices[lo:hi].astype(np.int64) + offset
    keep = scores != 0
    return top_of(scores[keep], ids[keep], k)


def sparse_search(
    queries: sp.csr_matrix,
    docs: sp.csr_matrix,
    top_k: int,
    candidates: list[list[int] | None] | None = None,
    limits: SparseSearchLimits | None = None,
) -> Hits:
    """Top-k documents by sparse dot product for each query row; ``candidates[i]`` restricts query i's pool."""
    if queries.shape[1] != docs.shape[1]:
        raise ValueError(f"query vocabulary {queries.shape[1]} != document vocabulary {docs.shape[1]}")
    limits = limits or SparseSearchLimits()
    hits: Hits = [([], []) for _ in range(queries.shape[0])]
    free = [i for i in range(queries.shape[0]) if candidates is None or candidates[i] is None]
    for start in range(0, len(free), limits.query_block):
        rows = free[start : start + limits.query_block]
        for i, found in zip(rows, _search_block(queries[rows], docs, top_k, limits)):
            hits[i] = found
    for i, pool in enumerate(candidates or []):
        if pool is not None:
            hits[i] = score_pool(queries[i], docs, np.asarray(pool, dtype=np.int64), top_k) if pool else ([], [])
    return hits


def _search_block(
    block: sp.csr_matrix, docs: sp.csr_matrix, top_k: int, limits: SparseSearchLimits
) -> list[tuple[list[int], list[float]]]:
    """Each query of ``block`` against every document shard, keeping a running top-k per query."""
    best = [(np.zeros(0, np.float32), np.zeros(0, np.int64)) for _ in range(block.shape[0])]
    block_t = block.T.tocsr()  # vocabulary x queries: one row per term, what a document row meets
    shard = limits.shard_docs(block.shape[0])
    for offset in range(0, docs.shape[0], shard):
        product = (docs[offset : offset + shard] @ block_t).T.tocsr()  # queries x shard documents
        for q in range(block.shape[0]):
            scores, ids = _row_top(product, q, offset, top_k)
            if scores.size:
                best[q] = top_of(np.concatenate([best[q][0], scores]), np.concatenate([best[q][1], ids]), top_k)
        del product
    return [(ids.tolist(), scores.astype(float).tolist()) for scores, ids in best]


def score_pool(query: sp.csr_matrix, docs: sp.csr_matrix, ids: np.ndarray, top_k: int) -> tuple[list[int], list[float]]:
    """One query row against the documents ``ids`` only: the best ``top_k`` of those with a non-zero score."""
    weights = np.zeros(docs.shape[1], dtype=np.float32)  # one vocabulary-wide query vector, never one per document
    weights[query.indices] = query.data
    scores = docs[ids] @ weights
    keep = scores != 0
    top_s, top_i = top_of(scores[keep], ids[keep], top_k)
    return top_i.tolist(), top_s.astype(float).tolist()
