"""Cross-encoder reranking (sentence-transformers ``CrossEncoder``) of a first stage's top documents.

The first stage retrieves max(top_k, rerank_k) documents; its top ``rerank_k`` are scored by the
cross-encoder on (query, title + " " + text), the query being the text the history strategy
serialized (the same text the first stage saw). "Top" is in the order a run file of the first stage
lists them (trec_eval's: score descending, ties by document id descending), not the searcher's own
tie order (lower corpus position first), so that a rerank is reproduced from the first stage's run
file written at the same depth, whichever documents tie across rank rerank_k. Reranked documents carry
their cross-encoder scores and come first; documents below rerank_k keep their first-stage order
underneath, with scores set strictly below the lowest cross-encoder score (one unit per rank) so that
every ranking of the run (trec_eval's included) shows that order.
"""

from __future__ import annotations

from typing import Any

from mtrbench.data.model import Corpus
from mtrbench.formats.run import ranked_positions
from mtrbench.infra.errors import MtrbenchError, first_line
from mtrbench.retrieve.base import Retriever
from mtrbench.search.hits import Hits


class CrossEncoderReranker:
    def __init__(
        self,
        first: Retriever,
        model: str,
        rerank_k: int = 100,
        device: str = "auto",
        batch_size: int = 32,
        show_progress: bool = True,
    ) -> None:
        if rerank_k < 1 or batch_size < 1:
            raise MtrbenchError("--rerank-k and --rerank-batch-size must be positive")
        from sentence_transformers import CrossEncoder

        from mtrbench.models.loading import ModelSource, pick_device  # deferred: loads torch

        self.first, self.rerank_k, self.batch_size, self.show_progress = first, rerank_k, batch_size, show_progress
        source = ModelSource(model, None)
        self.device = pick_device(device)
        try:
            self.model = CrossEncoder(source.location, device=self.device, local_files_only=source.local_only)
        except OSError as exc:
            raise MtrbenchError(f"--rerank {model}: cannot load a cross-encoder ({first_line(exc)})") from None
        source.resolve_revision()
        self.source = source
        # The run is named after the first stage; the reranker shows in the settings and the experiment name.
        self.name, self.revision = first.name, first.revision
        self.tokenizer, self.max_length, self.query_prompt = first.tokenizer, first.max_length, first.query_prompt
        self._corpus: Corpus | None = None

    @property
    def cache_report(self):
        return getattr(self.first, "cache_report", None)

    def settings(self) -> dict[str, Any]:
        first = self.first.settings()
        return {
            **first,
            "rerank": {
                "model": self.source.name,
                "revision": self.source.revision,
                "rerank_k": self.rerank_k,
                "max_length": getattr(self.model, "max_seq_length", None),
                "document": "title + ' ' + text",
                "below_rerank_k": "first-stage order",
            },
        }

    def pipeline_slug(self) -> dict[str, Any]:
        first = getattr(self.first, "pipeline_slug", None)
        return {**(first() if first else {}), "rerank": self.source.name, "rerankk": self.rerank_k}

    def index(self, corpus: Corpus) -> None:
        self.first.index(corpus)
        self._corpus = corpus

    def search(self, queries: list[str], top_k: int, candidates: list[list[int] | None] | None = None) -> Hits:
        if self._corpus is None:
            raise RuntimeError("index() the corpus before searching")
        ids = self._corpus.ids
        first_hits = [
            [docs[i] for i in ranked_positions([ids[d] for d in docs], scores)]
            for docs, scores in self.first.search(queries, max(top_k, self.rerank_k), candidates)
        ]
        pairs = [
            (queries[q], self._corpus.document_text(doc))
            for q, docs in enumerate(first_hits)
            for doc in docs[: self.rerank_k]
        ]
        scores = (
            self.model.predict(
                pairs, batch_size=self.batch_size, show_progress_bar=self.show_progress, convert_to_numpy=True
            ).tolist()
            if pairs
            else []
        )
        hits: Hits = []
        at = 0
        for docs in first_hits:
            head, tail = docs[: self.rerank_k], docs[self.rerank_k :]
            head_scores = scores[at : at + len(head)]
            at += len(head)
            order = ranked_positions([ids[d] for d in head], head_scores)
            ranked = [head[i] for i in order] + tail
            floor = min(head_scores, default=0.0)
            ranked_scores = [head_scores[i] for i in order] + [floor - 1.0 - i for i in range(len(tail))]
            hits.append((ranked[:top_k], ranked_scores[:top_k]))
        return hits
