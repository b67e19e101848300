"""Hybrid dense-sparse retrieval (H-RAG §3.2): score = alpha * dense_norm + (1 - alpha) * sparse_norm.

Each leg retrieves its own ``candidate_k`` documents per query; the candidate lists of the legs with
a non-zero weight are merged as a union, nothing cut before the merge (a leg weighted 0 cannot change
any score, so it adds no candidates: alpha 1.0 is the dense ranking and 0.0 the BM25 ranking, exactly).
Each leg's scores are min-max normalized per query over that leg's own candidates (best 1, worst 0; a
leg whose candidates all score the same gives them 1). A document one leg did not retrieve gets 0 from
that leg, as in Weaviate's relative-score fusion, which H-RAG's hybrid store uses.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mtrbench.data.model import Corpus
from mtrbench.infra.errors import MtrbenchError
from mtrbench.retrieve.base import Retriever
from mtrbench.search.hits import Hits

DEFAULT_ALPHA = 0.7  # H-RAG's submitted setting: 70% dense, 30% sparse
MIN_CANDIDATES = 100  # each leg retrieves max(top_k, this) unless candidate_k is given
NORMALIZATION = "min-max per query over each leg's candidates; a document missing from a leg gets 0 from it"
MERGE = "union of the candidates of the legs with a non-zero weight"


def min_max(scores: list[float]) -> np.ndarray:
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0:
        return values
    low, high = values.min(), values.max()
    if high == low:  # one candidate, or all equal: each is the leg's best
        return np.ones_like(values)
    return (values - low) / (high - low)


def combine(
    dense: tuple[list[int], list[float]], sparse: tuple[list[int], list[float]], alpha: float
) -> dict[int, float]:
    """One query's hybrid scores over the union of both legs' candidates."""
    dense_norm = dict(zip(dense[0], min_max(dense[1]).tolist())) if alpha > 0 else {}
    sparse_norm = dict(zip(sparse[0], min_max(sparse[1]).tolist())) if alpha < 1 else {}
    return {
        doc: alpha * dense_norm.get(doc, 0.0) + (1.0 - alpha) * sparse_norm.get(doc, 0.0)
        for doc in dense_norm.keys() | sparse_norm.keys()
    }


class HybridRetriever:
    """A dense leg (any dense or dual-encoder retriever, with its embedding cache) and BM25, fused by score."""

    def __init__(
        self, dense: Retriever, sparse: Retriever, alpha: float = DEFAULT_ALPHA, candidate_k: int | None = None
    ) -> None:
        if not 0.0 <= alpha <= 1.0:
            raise MtrbenchError(f"--alpha is the dense share and must lie in [0, 1], got {alpha}")
        if candidate_k is not None and candidate_k < 1:
            raise MtrbenchError("--candidate-k must be positive")
        self.dense, self.sparse = dense, sparse
        self.alpha, self.candidate_k = alpha, candidate_k
        self.name = f"hybrid:{dense.name}+{sparse.name}"
        self.revision = dense.revision
        # Queries are truncated for the dense leg, the only one with a length limit.
        self.tokenizer, self.max_length, self.query_prompt = dense.tokenizer, dense.max_length, dense.query_prompt

    @property
    def cache_report(self):
        return getattr(self.dense, "cache_report", None)

    def legs_k(self, top_k: int) -> int:
        return self.candidate_k if self.candidate_k is not None else max(top_k, MIN_CANDIDATES)

    def settings(self) -> dict[str, Any]:
        dense = self.dense.settings()
        return {
            "kind": "hybrid",
            "alpha": self.alpha,
            "candidate_k": self.candidate_k,
            "candidate_k_default": f"max(top_k, {MIN_CANDIDATES})",
            "normalization": NORMALIZATION,
            "merge": MERGE,
            "dtype": dense.get("dtype"),
            "dense": {"name": self.dense.name, "revision": self.dense.revision, **dense},
            "sparse": {"name": self.sparse.name, "revision": self.sparse.revision, **self.sparse.settings()},
        }

    def pipeline_slug(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "candk": self.candidate_k}

    def index(self, corpus: Corpus) -> None:
        self.dense.index(corpus)
        self.sparse.index(corpus)
        self._ids = corpus.ids

    def search(self, queries: list[str], top_k: int, candidates: list[list[int] | None] | None = None) -> Hits:
        k = self.legs_k(top_k)
        nothing: Hits = [([], []) for _ in queries]
        dense_hits = self.dense.search(queries, k, candidates) if self.alpha > 0 else nothing
        sparse_hits = self.sparse.search(queries, k, candidates) if self.alpha < 1 else nothing
        hits: Hits = []
        for dense, sparse in zip(dense_hits, sparse_hits):
            scores = combine(dense, sparse, self.alpha)
            # trec_eval's order (score, then document id descending), so a cut inside a tie keeps what it would
            order = sorted(scores, key=lambda doc: (scores[doc], self._ids[doc]), reverse=True)[:top_k]
            hits.append((order, [scores[doc] for doc in order]))
        return hits
