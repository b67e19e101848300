"""BPR's two-stage search (Yamada et al., 2021; pyserini's BinaryDenseFaissSearcher with ``--rerank``): the
documents' binary codes are searched by Hamming distance to the query's code, and those candidates are
re-ranked by the float query vector's dot product with their codes.

A code component is +1 where the vector's component is >= 0, else -1 (BPR's ``convert_to_binary_code``).
Hamming distance between two codes of D components is ``(D - a . b) / 2``, so the nearest codes are those
with the largest ``a . b``. Codes at the same distance keep corpus order (pyserini's faiss binary index
leaves that order to the index); the re-ranking stage sorts by score, ties again in corpus order.
"""

from __future__ import annotations

import torch

from mtrbench.search.hits import Hits

QUERY_BLOCK = 64


def binary_codes(vectors: torch.Tensor) -> torch.Tensor:
    """+1 / -1 codes (float32) of float vectors."""
    return torch.where(vectors >= 0, 1.0, -1.0).to(torch.float32)


def binary_search(
    queries: torch.Tensor,
    docs: torch.Tensor,
    top_k: int,
    binary_candidates: int,
    candidates: list[list[int] | None] | None = None,
) -> Hits:
    """Top-k documents per query row of float ``queries`` over float ``docs`` (one row per document):
    ``binary_candidates`` nearest codes in Hamming distance, re-ranked with the float query vector.
    ``candidates[i]`` restricts query i to those corpus positions (both stages run within them)."""
    codes = binary_codes(docs)
    queries = queries.to(codes.device, torch.float32)
    hits: Hits = []
    for start in range(0, queries.shape[0], QUERY_BLOCK):
        block = queries[start : start + QUERY_BLOCK]
        for row, query in enumerate(block):
            pool = candidates[start + row] if candidates is not None else None
            hits.append(_two_stage(query, codes, top_k, binary_candidates, pool))
    return hits


def _two_stage(
    query: torch.Tensor, codes: torch.Tensor, top_k: int, binary_candidates: int, pool: list[int] | None
) -> tuple[list[int], list[float]]:
    positions = torch.arange(codes.shape[0], device=codes.device) if pool is None else torch.as_tensor(pool)
    if positions.numel() == 0:
        return [], []
    pool_codes = codes.index_select(0, positions.to(codes.device))
    agreement = pool_codes @ binary_codes(query)  # D - 2 * Hamming distance
    order = torch.sort(agreement, descending=True, stable=True).indices[:binary_candidates]
    scores = pool_codes[order] @ query
    ranked = torch.sort(scores, descending=True, stable=True).indices[:top_k]
    return positions[order[ranked]].tolist(), scores[ranked].tolist()
