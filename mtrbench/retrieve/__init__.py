"""Retrievers: dense (sentence-transformers), dual encoders (query + document towers), sparse (BM25),
behind one protocol."""

from __future__ import annotations

from mtrbench.retrieve.base import Retriever
from mtrbench.retrieve.registry import REGISTRY, ModelSpec, resolve_model
from mtrbench.search.hits import Hits


def build_retriever(model: str, **options) -> Retriever:
    spec = resolve_model(model)
    if spec.kind == "sparse":
        from mtrbench.retrieve.sparse import BM25Retriever

        return BM25Retriever(show_progress=options.get("show_progress", True))
    if spec.kind == "dual":
        from mtrbench.retrieve.dual import DualEncoderRetriever

        return DualEncoderRetriever(spec, **options)
    from mtrbench.retrieve.dense import DenseRetriever

    return DenseRetriever(spec, **options)


__all__ = ["Hits", "Retriever", "REGISTRY", "ModelSpec", "resolve_model", "build_retriever"]
