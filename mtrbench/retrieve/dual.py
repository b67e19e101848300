"""Dual encoders: a query tower and a document tower (raw transformers models), pooled vectors compared
by dot product (or cosine). Dragon-multiturn and Dragon-DocChat are such pairs: CLS vector, dot product,
no normalization. Corpus embeddings are cached under the document tower alone."""

from __future__ import annotations

from typing import Any

from mtrbench.encode.engine import EncodingEngine
from mtrbench.encode.pooling import check_pooling
from mtrbench.encode.reference_formats import encoder_format, tower_kinds
from mtrbench.encode.towers import TowerSpec, load_tower
from mtrbench.infra.errors import MtrbenchError
from mtrbench.models.loading import ModelSource
from mtrbench.retrieve.dense import EmbeddingRetriever
from mtrbench.retrieve.options import LoadingOptions, ScaleOptions
from mtrbench.retrieve.registry import ModelSpec, pair_name
from mtrbench.search.binary import binary_search
from mtrbench.search.hits import Hits

SIMILARITIES = ("dot", "cosine")


class DualEncoderRetriever(EmbeddingRetriever):
    def __init__(
        self,
        spec: ModelSpec,
        loading: LoadingOptions | None = None,
        scale: ScaleOptions | None = None,
    ) -> None:
        loading, scale = loading or LoadingOptions(), scale or ScaleOptions()
        pooling, similarity, max_length = loading.pooling, loading.similarity, loading.max_length
        trust_remote_code = loading.trust_remote_code
        if loading.revision:
            raise MtrbenchError(
                "--revision pins one repository; a dual encoder has two (download both and pass "
                "their folders with --query-model/--doc-model)"
            )
        self.spec = spec
        # a reference format (ANCE, TCT-ColBERT, BPR, ...: encode.reference_formats) is named as a pooling
        self.format = encoder_format(pooling or spec.pooling)
        self.pooling = self.format.name if self.format else check_pooling(pooling or spec.pooling)
        self.similarity = similarity or spec.similarity
        if self.similarity not in SIMILARITIES:
            raise MtrbenchError(f"--similarity must be one of {', '.join(SIMILARITIES)}, got '{self.similarity}'")
        self._setup_common(loading, scale)
        self.normalize = self.similarity == "cosine"
        query_source, doc_source = ModelSource(spec.model_id, None), ModelSource(spec.doc_model_id, None)
        limit = max_length or spec.max_length
        query_kind, doc_kind = tower_kinds(self.format)
        query_limit = max_length or (self.format.query_max_length if self.format else None) or spec.max_length

        def tower_spec(source: ModelSource, tokenizer_from: str | None = None, query: bool = False) -> TowerSpec:
            return TowerSpec(
                query_kind if query else doc_kind,
                source.location,
                None,
                source.local_only,
                trust_remote_code,
                query_limit if query else limit,
                pooling=self.pooling,
                dtype=self.dtype,
                tokenizer_location=tokenizer_from,
            )

        query_tower = load_tower(tower_spec(query_source, query=True), self.device)
        doc_tower = load_tower(
            tower_spec(doc_source, query_source.location if spec.shared_tokenizer else None), self.device
        )
        for source in (query_source, doc_source):
            source.resolve_revision()
        self.query_source, self.doc_source = query_source, doc_source
        self.name = pair_name(query_source.name, doc_source.name)
        self.revision = (
            query_source.revision
            if query_source.revision == doc_source.revision
            else pair_name(query_source.revision, doc_source.revision)
        )
        self.query_engine = EncodingEngine(query_tower, self.engine_options, self.devices)
        self.doc_engine = EncodingEngine(doc_tower, self.engine_options, self.devices)
        self.tokenizer = query_tower.tokenizer
        self.max_length = query_tower.max_length

    def search(self, queries: list[str], top_k: int, candidates: list[list[int] | None] | None = None) -> Hits:
        if self.format is None or self.format.binary_candidates is None:
            return super().search(queries, top_k, candidates)
        if self._shards is not None or self._faiss is not None:
            raise MtrbenchError("BPR's binary two-stage search runs in memory: drop --search-memory, --ray and --index")
        q = self.query_engine.encode(
            queries, self.query_prompt, self.normalize, show_progress=self.show_progress, desc="Encoding queries"
        )
        return binary_search(q, self.corpus_embeddings, top_k, self.format.binary_candidates, candidates)

    def settings(self) -> dict[str, Any]:
        return {
            "kind": "dual",
            "query_model": self.query_source.name,
            "doc_model": self.doc_source.name,
            "pooling": self.pooling,
            "max_length": self.max_length,
            "doc_max_length": self.doc_engine.tower.max_length,
            "query_prompt": "",
            "doc_prompt": "",
            **self._engine_settings(),
            **self._binary_search_settings(),
        }

    def _binary_search_settings(self) -> dict[str, Any]:
        if self.format is None or self.format.binary_candidates is None:
            return {}
        return {"search": {"index": "binary-rerank", "binary_candidates": self.format.binary_candidates}}
