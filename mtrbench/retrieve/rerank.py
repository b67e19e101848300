"""Pointwise reranking of a first stage's top documents: a scorer gives each (query, document) pair a score.

Scorers: a BERT-style cross-encoder through sentence-transformers' ``CrossEncoder`` (:class:`CrossEncoderScorer`),
and the LLM recipes of ``retrieve/rerank_llm.py`` (yes/no logits of a causal LM, monoT5's true/false logits).
``retrieve/rerank_dispatch.py`` picks one from the ``--rerank`` name.

The first stage retrieves max(top_k, rerank_k) documents; its top ``rerank_k`` are scored on (query, title + " " +
text), the query being the text the history strategy serialized (the same text the first stage saw). "Top" is in
the order a run file of the first stage lists them (trec_eval's: score descending, ties by document id
descending), not the searcher's own tie order (lower corpus position first), so that a rerank is reproduced from
the first stage's run file written at the same depth, whichever documents tie across rank rerank_k. Reranked
documents carry their scores and come first; documents below rerank_k keep their first-stage order underneath,
with scores set strictly below the lowest reranked score (one unit per rank) so that every ranking of the run
(trec_eval's included) shows that order.
"""

from __future__ import annotations

from typing import Any, Protocol

from mtrbench.data.model import Corpus
from mtrbench.formats.run import ranked_positions
from mtrbench.infra.errors import MtrbenchError, first_line
from mtrbench.retrieve.base import Retriever
from mtrbench.search.hits import Hits

Pair = tuple[str, str]  # (query text, document text)


class PairScorer(Protocol):
    """Scores (query, document) pairs; ``settings()`` is recorded in the result's identity."""

    name: str  # the model as the experiment's name shows it

    def score(self, pairs: list[Pair], batch_size: int, show_progress: bool) -> list[float]: ...

    def settings(self) -> dict[str, Any]: ...


class CrossEncoderScorer:
    """A sentence-transformers ``CrossEncoder`` (BERT-style sequence classification, or any model it loads)."""

    def __init__(self, model: str, device: str = "auto") -> None:
        from sentence_transformers import CrossEncoder

        from mtrbench.models.loading import ModelSource, pick_device  # deferred: loads torch

        source = ModelSource(model, None)
        self.device = pick_device(device)
        try:
            self.model = CrossEncoder(source.location, device=self.device, local_files_only=source.local_only)
        except OSError as exc:
            raise MtrbenchError(f"--rerank {model}: cannot load a cross-encoder ({first_line(exc)})") from None
        source.resolve_revision()
        self.source, self.name = source, source.name

    def score(self, pairs: list[Pair], batch_size: int, show_progress: bool) -> list[float]:
        scores = self.model.predict(
            pairs, batch_size=batch_size, show_progress_bar=show_progress, convert_to_numpy=True
        )
        return [float(s) for s in scores.tolist()]

    def settings(self) -> dict[str, Any]:
        return {
            "model": self.source.name,
            "revision": self.source.revision,
            "kind": "cross-encoder",
            "max_length": getattr(self.model, "max_seq_length", None),
        }


class FirstStageHead:
    """What every reranking stage shares: the first stage run to max(top_k, depth), in run-file order."""

    first: Retriever
    _corpus: Corpus | None

    def _wrap(self, first: Retriever) -> None:
        # The run is named after the first stage; the reranker shows in the settings and the experiment name.
        self.first, self._corpus = first, None
        self.name, self.revision = first.name, first.revision
        self.tokenizer, self.max_length, self.query_prompt = first.tokenizer, first.max_length, first.query_prompt

    @property
    def cache_report(self) -> Any:
        return getattr(self.first, "cache_report", None)

    def index(self, corpus: Corpus) -> None:
        self.first.index(corpus)
        self._corpus = corpus

    def corpus(self) -> Corpus:
        if self._corpus is None:
            raise RuntimeError("index() the corpus before searching")
        return self._corpus

    def first_lists(
        self, queries: list[str], depth: int, candidates: list[list[int] | None] | None = None
    ) -> list[list[int]]:
        """Per query, the first stage's documents (corpus positions) in the order its run file lists them."""
        ids = self.corpus().ids
        return [
            [docs[i] for i in ranked_positions([ids[d] for d in docs], scores)]
            for docs, scores in self.first.search(queries, depth, candidates)
        ]


def reranked(
    ids: list[str], head: list[int], head_scores: list[float], tail: list[int], top_k: int
) -> tuple[list[int], list[float]]:
    """``head`` ordered by its scores (ties as a run file orders them), then ``tail`` in first-stage order with
    scores strictly below the head's lowest, cut to ``top_k``."""
    order = ranked_positions([ids[d] for d in head], head_scores)
    floor = min(head_scores, default=0.0)
    docs = [head[i] for i in order] + tail
    scores = [head_scores[i] for i in order] + [floor - 1.0 - i for i in range(len(tail))]
    return docs[:top_k], scores[:top_k]


class PointwiseReranker(FirstStageHead):
    def __init__(
        self,
        first: Retriever,
        scorer: PairScorer,
        rerank_k: int = 100,
        batch_size: int = 32,
        show_progress: bool = True,
    ) -> None:
        if rerank_k < 1 or batch_size < 1:
            raise MtrbenchError("--rerank-k and --rerank-batch-size must be positive")
        self._wrap(first)
        self.scorer, self.rerank_k, self.batch_size, self.show_progress = scorer, rerank_k, batch_size, show_progress

    def settings(self) -> dict[str, Any]:
        return {
            **self.first.settings(),
            "rerank": {
                **self.scorer.settings(),
                "rerank_k": self.rerank_k,
                "document": "title + ' ' + text",
                "below_rerank_k": "first-stage order",
            },
        }

    def pipeline_slug(self) -> dict[str, Any]:
        first = getattr(self.first, "pipeline_slug", None)
        return {**(first() if first else {}), "rerank": self.scorer.name, "rerankk": self.rerank_k}

    def search(self, queries: list[str], top_k: int, candidates: list[list[int] | None] | None = None) -> Hits:
        corpus = self.corpus()
        first_hits = self.first_lists(queries, max(top_k, self.rerank_k), candidates)
        pairs = [
            (queries[q], corpus.document_text(d)) for q, docs in enumerate(first_hits) for d in docs[: self.rerank_k]
        ]
        scores = self.scorer.score(pairs, self.batch_size, self.show_progress) if pairs else []
        hits: Hits = []
        at = 0
        for docs in first_hits:
            head, tail = docs[: self.rerank_k], docs[self.rerank_k :]
            hits.append(reranked(corpus.ids, head, scores[at : at + len(head)], tail, top_k))
            at += len(head)
        return hits


class CrossEncoderReranker(PointwiseReranker):
    """A ``CrossEncoder`` reranking stage (the name and arguments it had before the other scorers came)."""

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
        super().__init__(first, CrossEncoderScorer(model, device), rerank_k, batch_size, show_progress)
