"""Exact inner-product search with chunked top-k, on whatever device the embeddings live on.

Corpus chunks are scored with one matmul each and merged with a vectorized top-k (no Python heap
per hit), so memory stays at ``query_chunk x doc_chunk`` scores.
"""

from __future__ import annotations

import torch

from mtrbench.search.hits import Hits


def exact_search(queries: torch.Tensor, docs: torch.Tensor, top_k: int,
                 candidates: list[list[int] | None] | None = None,
                 query_chunk: int = 1024, doc_chunk: int = 65536) -> Hits:
    """Top-k docs by dot product for each query row; ``candidates[i]`` restricts query i's pool."""
    if queries.shape[1] != docs.shape[1]:
        raise ValueError(f"query dim {queries.shape[1]} != doc dim {docs.shape[1]}")
    hits: Hits = [([], [])] * queries.shape[0]
    free = [i for i in range(queries.shape[0]) if candidates is None or candidates[i] is None]
    if free:
        scores, ids = _full_search(queries[free], docs, top_k, query_chunk, doc_chunk)
        for row, i in enumerate(free):
            hits[i] = (ids[row].tolist(), scores[row].tolist())
    if candidates is not None:
        for i, pool in enumerate(candidates):
            if pool is None:
                continue
            if not pool:
                hits[i] = ([], [])
                continue
            pool_t = torch.as_tensor(pool, device=docs.device)
            s = (docs.index_select(0, pool_t).float() @ queries[i].float())
            k = min(top_k, len(pool))
            top_s, top_i = torch.topk(s, k)
            hits[i] = (pool_t[top_i].tolist(), top_s.tolist())
    return hits


def _full_search(queries: torch.Tensor, docs: torch.Tensor, top_k: int, query_chunk: int, doc_chunk: int):
    n_docs = docs.shape[0]
    k = min(top_k, n_docs)
    all_scores, all_ids = [], []
    for qs in range(0, queries.shape[0], query_chunk):
        q = queries[qs:qs + query_chunk]
        best_s = torch.full((q.shape[0], 0), float("-inf"), device=docs.device)
        best_i = torch.zeros((q.shape[0], 0), dtype=torch.long, device=docs.device)
        for ds in range(0, n_docs, doc_chunk):
            d = docs[ds:ds + doc_chunk]
            s = (q @ d.T).float()
            chunk_s, chunk_i = torch.topk(s, min(k, d.shape[0]), dim=1)
            merged_s = torch.cat([best_s, chunk_s], dim=1)
            merged_i = torch.cat([best_i, chunk_i + ds], dim=1)
            best_s, pos = torch.topk(merged_s, min(k, merged_s.shape[1]), dim=1)
            best_i = merged_i.gather(1, pos)
        all_scores.append(best_s.cpu())
        all_ids.append(best_i.cpu())
    return torch.cat(all_scores), torch.cat(all_ids)
