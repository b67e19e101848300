"""Exact MaxSim (late interaction): a query's score for a passage is the sum over its token vectors of the
largest dot product with any of the passage's token vectors (``meanmaxsim``: divided by the query's token
count), as sentence-transformers' ``maxsim`` scores it.

Passages come from a :class:`~mtrbench.encode.token_store.TokenMatrix` (fp16, usually memory-mapped) and are
scored in fp32, a block of passages at a time: each block is padded to its longest passage, padded positions
are masked out of the max (never scored as a zero vector), one matmul scores every query token against every
passage token of the block. Two uses:

- :func:`maxsim_rerank`: each query's own candidate passages (a first stage's pool);
- :func:`maxsim_search`: the whole corpus in blocks with a running top-k, so memory stays at one block's
  scores whatever the corpus size.

Equal scores rank by lower corpus position, as every searcher here (search/topk.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mtrbench.encode.token_store import TokenMatrix
from mtrbench.infra.reporting import progress_bar
from mtrbench.search.hits import Hits
from mtrbench.search.topk import merge_top, select_top

DEFAULT_BLOCK_ELEMENTS = 1 << 25  # query tokens x passage tokens scored at once (128 MiB of fp32)
QUERY_TOKENS_PER_CHUNK = 8192


@dataclass(frozen=True)
class QueryTokens:
    """Queries' token vectors flattened: ``vectors`` (tokens, dim) fp32, ``owner`` the query of each row."""

    vectors: torch.Tensor
    owner: torch.Tensor
    counts: torch.Tensor  # tokens per query

    @classmethod
    def of(cls, queries: list[torch.Tensor], device: str | torch.device = "cpu") -> QueryTokens:
        counts = torch.tensor([len(q) for q in queries], dtype=torch.long)
        dim = int(queries[0].shape[1]) if queries else 0
        vectors = torch.cat([q.float() for q in queries]) if queries else torch.zeros(0, dim)
        owner = torch.repeat_interleave(torch.arange(len(queries)), counts)
        return cls(vectors.to(device), owner.to(device), counts.to(device))

    def __len__(self) -> int:
        return len(self.counts)

    def subset(self, first: int, end: int) -> QueryTokens:
        rows = (self.owner >= first) & (self.owner < end)
        return QueryTokens(self.vectors[rows], self.owner[rows] - first, self.counts[first:end])


def _padded(matrix: TokenMatrix, doc_ids: np.ndarray, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """(passages, width, dim) fp32 token vectors of ``doc_ids`` and the (passages, width) mask of real ones."""
    starts = matrix.offsets[doc_ids]
    lengths = matrix.offsets[doc_ids + 1] - starts
    width = max(int(lengths.max(initial=0)), 1)
    step = np.arange(width)
    rows = starts[:, None] + np.minimum(step[None, :], np.maximum(lengths - 1, 0)[:, None])
    rows = np.clip(rows, 0, max(matrix.n_tokens - 1, 0))
    vectors = torch.from_numpy(np.ascontiguousarray(matrix.vectors[rows.ravel()])).to(device, torch.float32)
    mask = torch.from_numpy(step[None, :] < lengths[:, None]).to(device)
    return vectors.view(len(doc_ids), width, matrix.dim), mask


def score_passages(
    queries: QueryTokens, matrix: TokenMatrix, doc_ids: np.ndarray, length_normalize: bool = False
) -> torch.Tensor:
    """(queries, len(doc_ids)) MaxSim scores, fp32."""
    device = queries.vectors.device
    if len(doc_ids) == 0 or len(queries) == 0:
        return torch.zeros(len(queries), len(doc_ids), device=device)
    docs, mask = _padded(matrix, np.asarray(doc_ids, dtype=np.int64), device)
    n_docs, width, dim = docs.shape
    token_scores = (queries.vectors @ docs.view(-1, dim).T).view(-1, n_docs, width)
    token_scores.masked_fill_(~mask.unsqueeze(0), float("-inf"))
    best = token_scores.amax(dim=2)  # (query tokens, passages)
    scores = torch.zeros(len(queries), n_docs, device=device).index_add_(0, queries.owner, best)
    if length_normalize:
        scores /= queries.counts.clamp(min=1).unsqueeze(1).float()
    return scores


def _docs_per_block(query_tokens: int, width: int, block_elements: int) -> int:
    return max(16, block_elements // max(query_tokens * width, 1))


def maxsim_rerank(
    queries: QueryTokens,
    matrix: TokenMatrix,
    candidates: list[list[int]],
    top_k: int,
    length_normalize: bool = False,
    block_elements: int = DEFAULT_BLOCK_ELEMENTS,
) -> Hits:
    """Each query's top_k of its own candidates (corpus positions) by exact MaxSim."""
    hits: Hits = []
    longest = int(np.diff(matrix.offsets).max(initial=1))
    for i, pool in enumerate(candidates):
        ids = np.unique(np.asarray(pool, dtype=np.int64))
        one = queries.subset(i, i + 1)
        step = _docs_per_block(len(one.vectors), longest, block_elements)
        scores = torch.cat(
            [score_passages(one, matrix, ids[s : s + step], length_normalize) for s in range(0, len(ids), step)]
            or [torch.zeros(1, 0)],
            dim=1,
        )
        top_s, top_i = select_top(scores, torch.from_numpy(ids).to(scores.device).unsqueeze(0), top_k)
        hits.append((top_i[0].tolist(), top_s[0].tolist()))
    return hits


def maxsim_search(
    queries: QueryTokens,
    matrix: TokenMatrix,
    top_k: int,
    length_normalize: bool = False,
    block_elements: int = DEFAULT_BLOCK_ELEMENTS,
    show_progress: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(scores, corpus positions), each (queries, min(top_k, n_docs)), over the whole corpus."""
    longest = int(np.diff(matrix.offsets).max(initial=1))
    found_s, found_i = [], []
    chunks = _query_chunks(queries)
    total = len(chunks) * matrix.n_docs
    with progress_bar(total=total, show_progress=show_progress, desc="MaxSim over the corpus", unit="doc") as bar:
        for first, end in chunks:
            part = queries.subset(first, end)
            step = _docs_per_block(len(part.vectors), longest, block_elements)
            best: tuple[torch.Tensor, torch.Tensor] | None = None
            for start in range(0, matrix.n_docs, step):
                ids = np.arange(start, min(start + step, matrix.n_docs), dtype=np.int64)
                scores = score_passages(part, matrix, ids, length_normalize)
                top = select_top(scores, torch.from_numpy(ids).to(scores.device), top_k)
                best = top if best is None else merge_top([best, top], top_k)
                bar.update(len(ids))
            assert best is not None or matrix.n_docs == 0
            if best is None:
                best = (torch.zeros(end - first, 0), torch.zeros(end - first, 0, dtype=torch.long))
            found_s.append(best[0].cpu())
            found_i.append(best[1].cpu())
    if not found_s:
        return torch.zeros(0, 0), torch.zeros(0, 0, dtype=torch.long)
    return torch.cat(found_s), torch.cat(found_i)


def _query_chunks(queries: QueryTokens) -> list[tuple[int, int]]:
    """Ranges of queries holding at most QUERY_TOKENS_PER_CHUNK tokens (at least one query each)."""
    chunks, first, tokens = [], 0, 0
    for i, count in enumerate(queries.counts.tolist()):
        if i > first and tokens + count > QUERY_TOKENS_PER_CHUNK:
            chunks.append((first, i))
            first, tokens = i, 0
        tokens += count
    if first < len(queries):
        chunks.append((first, len(queries)))
    return chunks
