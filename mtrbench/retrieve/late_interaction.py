"""Late-interaction (ColBERT-shaped) retrieval: sentence-transformers ``MultiVectorEncoder`` checkpoints scored by
MaxSim over their token vectors, never as one vector per text.

* :class:`MultiVectorRetriever`: a first stage. Passage token vectors are encoded with the checkpoint's own
  document marker and masking, stored fp16 (encode/token_store.py), and searched by exact MaxSim over the
  whole corpus (search/maxsim.py) or, with ``--index voyager[:...]``, through an HNSW graph over the token
  vectors whose candidates are then scored by exact MaxSim (search/token_index.py). Candidate pools
  (hybrid legs, parent-child) are scored by exact MaxSim.
* :class:`MaxSimReranker`: exact MaxSim of a multi-vector model as a reranking stage over any first stage's top
  ``rerank_k`` documents (the shape of retrieve/rerank.py's cross-encoder reranker).

Document vectors are rounded to fp16 in both (stored or not), so scores do not depend on ``--no-cache``.
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from mtrbench.data.model import Corpus
from mtrbench.encode.cache import corpus_fingerprint
from mtrbench.encode.multivector import (
    DOCUMENT,
    QUERY,
    CheckpointSettings,
    checkpoint_settings,
    embedding_dim,
    encode_tokens,
    load_multivector,
)
from mtrbench.encode.token_store import TOKEN_DTYPE, TokenMatrix, TokenStore, TokenStoreKey, TokenStoreReport
from mtrbench.formats.run import ranked_positions
from mtrbench.infra.errors import UserInputError
from mtrbench.models.loading import ModelSource, pick_device, pick_dtype
from mtrbench.models.spec import MULTI_VECTOR, ModelSpec
from mtrbench.retrieve.base import Retriever
from mtrbench.retrieve.options import LoadingOptions, ScaleOptions
from mtrbench.search.hits import Hits
from mtrbench.search.maxsim import QueryTokens, maxsim_rerank, maxsim_search
from mtrbench.search.token_index import TokenIndexSpec, VoyagerTokenIndex

log = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 32
_TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


class MultiVectorModel:
    """A loaded multi-vector checkpoint, what it sets, and its token vectors for queries and passages."""

    def __init__(self, spec: ModelSpec, loading: LoadingOptions, what: str) -> None:
        if loading.pooling or loading.similarity:
            raise UserInputError(
                f"--pooling and --similarity apply to dual encoders; {what} '{spec.alias}' is multi-vector "
                "(MaxSim over token vectors)"
            )
        if loading.max_length:
            raise UserInputError(
                f"--max-length: {what} '{spec.alias}' is multi-vector; it reads queries and passages at the "
                "lengths its checkpoint sets (query_length, query expansion, document_length)"
            )
        if spec.needs_remote_code and not loading.trust_remote_code:
            raise UserInputError(
                f"model '{spec.alias}' runs code from its repository; pass --trust-remote-code if you trust "
                f"{spec.model_id}"
            )
        if loading.batch_size is not None and loading.batch_size < 1:
            raise UserInputError("--batch-size must be positive")
        self.device = pick_device(loading.device)
        self.dtype = pick_dtype(loading.dtype, self.device)
        self.batch_size = loading.batch_size or DEFAULT_BATCH_SIZE
        self.show_progress = loading.show_progress
        self.source = ModelSource(spec.model_id, loading.revision or spec.revision)
        self.model = load_multivector(
            self.source.location, self.device, self.source.local_only, loading.trust_remote_code
        )
        if self.dtype != "fp32":
            self.model.to(_TORCH_DTYPES[self.dtype])
        self.source.resolve_revision()
        self.checkpoint: CheckpointSettings = checkpoint_settings(self.model)
        # an alias's own marker replaces the checkpoint's; otherwise the checkpoint's prompts apply as saved
        self.query_prompt = spec.query_prompt or self.checkpoint.query_prompt
        self.doc_prompt = spec.doc_prompt or self.checkpoint.doc_prompt
        self.length_normalize = self.checkpoint.similarity == "meanmaxsim"

    def encode(self, texts: list[str], side: str, desc: str) -> list[torch.Tensor]:
        prompt = self.query_prompt if side == QUERY else self.doc_prompt
        return encode_tokens(self.model, texts, side, self.batch_size, self.show_progress, desc, prompt)

    def dim(self) -> int:
        return embedding_dim(self.model)

    def queries(self, texts: list[str]) -> QueryTokens:
        return QueryTokens.of(self.encode(texts, QUERY, "Encoding queries"))

    def settings(self) -> dict[str, Any]:
        return {
            **self.checkpoint.as_dict(),
            "query_marker": self.query_prompt,
            "document_marker": self.doc_prompt,
            "query_max_tokens": self.checkpoint.query_tokens,
            "token_dtype": TOKEN_DTYPE,
            "score_dtype": "fp32",
            "dtype": self.dtype,
            "device": self.device,
            "batch_size": self.batch_size,
            "encoder": "sentence-transformers MultiVectorEncoder",
        }


class MultiVectorRetriever:
    def __init__(self, spec: ModelSpec, loading: LoadingOptions, scale: ScaleOptions) -> None:
        what = f"'{spec.alias}' is a multi-vector (late-interaction) model"
        self.index_spec = TokenIndexSpec.parse(scale.index)  # faiss: one error line
        if scale.search_memory is not None or scale.ray:
            flag = "--search-memory" if scale.search_memory is not None else "--ray"
            raise UserInputError(f"{flag}: {what}, which has no {flag} search path; search it without {flag}")
        self.spec = spec
        self.mv = MultiVectorModel(spec, loading, "model")
        self.name, self.revision = self.mv.source.name, self.mv.source.revision
        self.tokenizer = self.mv.model.tokenizer
        # mtrbench fits the serialized query into this many tokens (the current question kept whole), so
        # sentence-transformers' own right-truncation at query_length never cuts the question
        self.max_length = self.mv.checkpoint.query_tokens
        self.query_prompt = self.mv.query_prompt
        self.store = TokenStore(loading.cache_dir) if loading.use_cache else None
        self.cache_report: TokenStoreReport | None = None
        self._matrix: TokenMatrix | None = None
        self._index: VoyagerTokenIndex | None = None

    def settings(self) -> dict[str, Any]:
        search = self._index.settings() if self._index is not None else {"index": "exact", "approximate": False}
        if self._index is None and self.index_spec.approximate:
            search = {"index": self.index_spec.describe(), "library": "voyager", "approximate": True}
        return {
            "kind": MULTI_VECTOR,
            **self.mv.settings(),
            "token_store": "on" if self.store is not None else "off",
            "search": search,
        }

    def pipeline_slug(self) -> dict[str, Any]:
        """An approximate index names the experiment, so its results never overwrite exact ones."""
        return {"index": self.index_spec.describe()} if self.index_spec.approximate else {}

    def index(self, corpus: Corpus) -> None:
        texts = [corpus.document_text(i) for i in range(len(corpus))]

        def encode(todo: list[str]) -> list[torch.Tensor]:
            return self.mv.encode(todo, DOCUMENT, "Encoding corpus")

        if self.store is None:
            self._matrix = TokenMatrix.from_tensors(encode(texts), self.mv.dim())
        else:
            key = TokenStoreKey(
                model=self.mv.source.name,
                revision=self.mv.source.cache_revision,
                prompt=self.mv.doc_prompt,
                settings={**self.mv.checkpoint.as_dict(), "dtype": self.mv.dtype},
                corpus=corpus_fingerprint(corpus.ids, texts),
                n_docs=len(texts),
            )
            self._matrix, self.cache_report = self.store.load_or_encode(key, texts, encode)
        if self.index_spec.approximate:
            self._index = VoyagerTokenIndex(self.index_spec, self._matrix, self.mv.show_progress)

    @property
    def token_matrix(self) -> TokenMatrix:
        if self._matrix is None:
            raise RuntimeError("index() the corpus first")
        return self._matrix

    def search(self, queries: list[str], top_k: int, candidates: list[list[int] | None] | None = None) -> Hits:
        matrix = self.token_matrix
        encoded = self.mv.queries(queries)
        normalize = self.mv.length_normalize
        hits: Hits = [([], [])] * len(queries)
        pools = candidates or [None] * len(queries)
        free = [i for i, pool in enumerate(pools) if pool is None]
        pooled = [i for i, pool in enumerate(pools) if pool is not None]
        if pooled:
            scored = maxsim_rerank(
                _select(encoded, pooled), matrix, [list(pools[i] or []) for i in pooled], top_k, normalize
            )
            for i, hit in zip(pooled, scored):
                hits[i] = hit
        if free:
            part = _select(encoded, free)
            if self._index is not None:
                found = self._index.search(part, top_k, normalize)
            else:
                scores, ids = maxsim_search(part, matrix, top_k, normalize, show_progress=self.mv.show_progress)
                found = [(row_i, row_s) for row_s, row_i in zip(scores.tolist(), ids.tolist())]
            for i, hit in zip(free, found):
                hits[i] = hit
        return hits


def _select(queries: QueryTokens, rows: list[int]) -> QueryTokens:
    if rows == list(range(len(queries))):
        return queries
    parts = [queries.vectors[queries.owner == i] for i in rows]
    return QueryTokens.of(parts, queries.vectors.device)


class MaxSimReranker:
    """Exact MaxSim of a multi-vector model over the first stage's top ``rerank_k`` documents. As with the
    cross-encoder reranker, "top" is in the first stage's run-file order; reranked documents come first with
    their MaxSim scores, the rest keep the first stage's order below the lowest of them. Only the candidate
    passages are encoded (fp16-rounded, as the token store keeps them), never the whole corpus."""

    def __init__(
        self, inner: Retriever, model: str | ModelSpec, rerank_k: int, loading: LoadingOptions | None = None
    ) -> None:
        if rerank_k < 1:
            raise UserInputError("--rerank-k must be positive")
        spec = model if isinstance(model, ModelSpec) else ModelSpec(model, MULTI_VECTOR, model_id=model)
        self.inner, self.rerank_k = inner, rerank_k
        self.mv = MultiVectorModel(spec, loading or LoadingOptions(), "--rerank")
        # the run is named after the first stage; the reranker shows in the settings and the experiment name
        self.name, self.revision = inner.name, inner.revision
        self.tokenizer, self.max_length, self.query_prompt = inner.tokenizer, inner.max_length, inner.query_prompt
        self._corpus: Corpus | None = None

    @property
    def cache_report(self) -> Any:
        return getattr(self.inner, "cache_report", None)

    def settings(self) -> dict[str, Any]:
        return {
            **self.inner.settings(),
            "rerank": {
                "kind": MULTI_VECTOR,
                "model": self.mv.source.name,
                "revision": self.mv.source.revision,
                "rerank_k": self.rerank_k,
                "scoring": self.mv.checkpoint.similarity,
                **self.mv.settings(),
                "document": "title + ' ' + text",
                "below_rerank_k": "first-stage order",
            },
        }

    def pipeline_slug(self) -> dict[str, Any]:
        first = getattr(self.inner, "pipeline_slug", None)
        return {**(first() if first else {}), "rerank": self.mv.source.name, "rerankk": self.rerank_k}

    def index(self, corpus: Corpus) -> None:
        self.inner.index(corpus)
        self._corpus = corpus

    def search(self, queries: list[str], top_k: int, candidates: list[list[int] | None] | None = None) -> Hits:
        if self._corpus is None:
            raise RuntimeError("index() the corpus before searching")
        ids = self._corpus.ids
        first_hits = [
            [docs[i] for i in ranked_positions([ids[d] for d in docs], scores)]
            for docs, scores in self.inner.search(queries, max(top_k, self.rerank_k), candidates)
        ]
        needed = sorted({d for docs in first_hits for d in docs[: self.rerank_k]})
        local = {doc: row for row, doc in enumerate(needed)}
        texts = [self._corpus.document_text(d) for d in needed]
        matrix = TokenMatrix.from_tensors(self.mv.encode(texts, DOCUMENT, "Encoding candidates"), self.mv.dim())
        heads = [[local[d] for d in docs[: self.rerank_k]] for docs in first_hits]
        scored = maxsim_rerank(self.mv.queries(queries), matrix, heads, self.rerank_k, self.mv.length_normalize)
        hits: Hits = []
        for docs, (rows, scores) in zip(first_hits, scored):
            head = [needed[r] for r in rows]
            order = ranked_positions([ids[d] for d in head], scores)
            tail = docs[self.rerank_k :]
            floor = min(scores, default=0.0)
            ranked = [head[i] for i in order] + tail
            ranked_scores = [scores[i] for i in order] + [floor - 1.0 - i for i in range(len(tail))]
            hits.append((ranked[:top_k], ranked_scores[:top_k]))
        return hits


__all__ = ["MaxSimReranker", "MultiVectorModel", "MultiVectorRetriever"]
