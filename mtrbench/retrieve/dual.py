"""Dual encoders: a query tower and a document tower (raw transformers models), pooled vectors compared
by dot product (or cosine). Dragon-multiturn and Dragon-DocChat are such pairs: CLS vector, dot product,
no normalization. Corpus embeddings are cached under the document tower alone."""

from __future__ import annotations

from typing import Any

from mtrbench.encode.engine import EncodingEngine
from mtrbench.encode.pooling import check_pooling
from mtrbench.encode.towers import TRANSFORMERS, TowerSpec, load_tower
from mtrbench.infra.errors import MtrbenchError
from mtrbench.models.loading import ModelSource
from mtrbench.retrieve.dense import EmbeddingRetriever
from mtrbench.retrieve.options import LoadingOptions, ScaleOptions
from mtrbench.retrieve.registry import ModelSpec, pair_name

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
        self.pooling = check_pooling(pooling or spec.pooling)
        self.similarity = similarity or spec.similarity
        if self.similarity not in SIMILARITIES:
            raise MtrbenchError(f"--similarity must be one of {', '.join(SIMILARITIES)}, got '{self.similarity}'")
        self._setup_common(loading, scale)
        self.normalize = self.similarity == "cosine"
        query_source, doc_source = ModelSource(spec.model_id, None), ModelSource(spec.doc_model_id, None)
        limit = max_length or spec.max_length

        def tower_spec(source: ModelSource, tokenizer_from: str | None = None) -> TowerSpec:
            return TowerSpec(
                TRANSFORMERS,
                source.location,
                None,
                source.local_only,
                trust_remote_code,
                limit,
                pooling=self.pooling,
                dtype=self.dtype,
                tokenizer_location=tokenizer_from,
            )

        query_tower = load_tower(tower_spec(query_source), self.device)
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
        }
