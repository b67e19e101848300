"""BM25 through bm25s (Lucene scoring variant)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mtrbench.data.model import Corpus
from mtrbench.search.hits import Hits

K1, B = 0.9, 0.4  # Anserini/Pyserini defaults, the usual BM25 baseline in IR papers


class BM25Retriever:
    name = "bm25"
    revision = f"bm25s-k1={K1}-b={B}"
    tokenizer = None
    max_length: int | None = None
    query_prompt = ""

    def __init__(self, show_progress: bool = True) -> None:
        self.show_progress = show_progress
        self._bm25 = None

    def settings(self) -> dict[str, Any]:
        import bm25s

        return {
            "kind": "sparse",
            "k1": K1,
            "b": B,
            "method": "lucene",
            "stopwords": "en",
            "bm25s_version": getattr(bm25s, "__version__", "unknown"),
        }

    def _tokenize(self, texts: list[str]) -> list[list[str]]:
        import bm25s

        return bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)

    def index(self, corpus: Corpus) -> None:
        import bm25s

        self._bm25 = bm25s.BM25(k1=K1, b=B, method="lucene")
        tokens = self._tokenize([corpus.document_text(i) for i in range(len(corpus))])
        self._bm25.index(tokens, show_progress=self.show_progress)
        self._n_docs = len(corpus)

    def search(self, queries: list[str], top_k: int, candidates: list[list[int] | None] | None = None) -> Hits:
        if self._bm25 is None:
            raise RuntimeError("index() the corpus before searching")
        vocab = self._bm25.vocab_dict
        hits: Hits = []
        for i, tokens in enumerate(self._tokenize(queries)):
            known = [t for t in tokens if t in vocab]
            pool = None if candidates is None else candidates[i]
            if not known or pool == []:
                hits.append(([], []))
                continue
            scores = self._bm25.get_scores(known)
            ids = np.arange(self._n_docs) if pool is None else np.asarray(pool)
            pool_scores = scores[ids]
            keep = ids[pool_scores > 0]
            kept_scores = scores[keep]
            order = np.argsort(-kept_scores, kind="stable")[:top_k]
            hits.append((keep[order].tolist(), kept_scores[order].astype(float).tolist()))
        return hits
