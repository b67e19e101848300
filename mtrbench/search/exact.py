"""Exact inner-product search with chunked top-k, on whatever device the embeddings live on.

Corpus chunks are scored with one matmul each and merged with a vectorized top-k (no Python heap
per hit), so memory stays at ``query_chunk x doc_chunk`` scores. Equal scores rank by lower corpus
position (``search.topk``), so every searcher built on this one - sharded, streaming - returns the same
list including ties.
"""

from __future__ import annotations

import torch

from mtrbench.search.hits import Hits
from mtrbench.search.topk import merge_top, select_top


def exact_search(
    queries: torch.Tensor,
    docs: torch.Tensor,
    top_k: int,
    candidates: list[list[int] | None] | None = None,
    query_chunk: int = 1024,
    doc_chunk: int = 65536,
) -> Hits:
    """Top-k docs by dot product for each query row; ``candidates[i]`` restricts query i's pool."""
    if queries.shape[1] != docs.shape[1]:
        raise ValueError(f"query dim {queries.shape[1]} != doc dim {docs.shape[1]}")
    hits: Hits = [([], [])] * queries.shape[0]
    free = [i for i in range(queries.shape[0]) if candidates is None or candidates[i] is None]
    if free:
        scores, ids = full_search(queries[free], docs, top_k, query_chunk, doc_chunk)
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
            s = docs.index_select(0, pool_t).float() @ queries[i].float()
            top_s, top_i = select_top(s.unsqueeze(0), pool_t.unsqueeze(0), top_k)
            hits[i] = (top_i[0].tolist(), top_s[0].tolist())
    return hits


def full_search(
    queries: torch.Tensor, docs: torch.Tensor, top_k: int, query_chunk: int, doc_chunk: int, offset: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """(scores, corpus positions + ``offset``), each (Q, min(top_k, len(docs))), on the host."""
    all_scores, all_ids = [], []
    for qs in range(0, queries.shape[0], query_chunk):
        q = queries[qs : qs + query_chunk]
        best: tuple[torch.Tensor, torch.Tensor] | None = None
        for ds in range(0, docs.shape[0], doc_chunk):
            d = docs[ds : ds + doc_chunk]
            positions = torch.arange(offset + ds, offset + ds + d.shape[0], device=docs.device)
            part = select_top((q @ d.T).float(), positions, top_k)
            best = part if best is None else merge_top([best, part], top_k)
        if best is None:
            best = (torch.zeros(q.shape[0], 0), torch.zeros(q.shape[0], 0, dtype=torch.long))
        all_scores.append(best[0].cpu())
        all_ids.append(best[1].cpu())
    if not all_scores:
        return torch.zeros(0, 0), torch.zeros(0, 0, dtype=torch.long)
    return torch.cat(all_scores), torch.cat(all_ids)
