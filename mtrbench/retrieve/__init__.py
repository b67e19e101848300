"""Retrievers: dense (sentence-transformers), dual encoders (query + document towers), sparse (BM25), model
objects from Python, behind one protocol; built by one builder (``retrieve/builder.py``)."""

from __future__ import annotations

from mtrbench.retrieve.base import Retriever
from mtrbench.retrieve.builder import ResolvedModel, assemble, build_retriever, load_legs, resolve
from mtrbench.retrieve.options import LoadingOptions, PipelineOptions, RetrieverOptions, ScaleOptions
from mtrbench.retrieve.registry import REGISTRY, ModelSpec, resolve_model
from mtrbench.search.hits import Hits

__all__ = [
    "Hits",
    "Retriever",
    "REGISTRY",
    "ModelSpec",
    "RetrieverOptions",
    "LoadingOptions",
    "ScaleOptions",
    "PipelineOptions",
    "ResolvedModel",
    "resolve",
    "resolve_model",
    "build_retriever",
    "load_legs",
    "assemble",
]
