"""The one assembly path: a model specification (a name, a ``ModelSpec`` or a model object) resolved once and
built into a retriever with its pipeline stages (hybrid legs, parent-child chunking, cross-encoder reranking).
The CLI, ``mtrbench.evaluate``, sweeps and ``rag`` all build here."""

from __future__ import annotations

from dataclasses import dataclass, replace

from mtrbench.infra.errors import UserInputError
from mtrbench.models.kinds import settled_kind
from mtrbench.models.spec import HYBRID, MULTI_VECTOR, SPARSE
from mtrbench.retrieve.base import Retriever
from mtrbench.retrieve.chunking import Chunking, ParentChildRetriever
from mtrbench.retrieve.options import LoadingOptions, PipelineOptions, RetrieverOptions, ScaleOptions
from mtrbench.retrieve.registry import ModelSpec, resolve_model
from mtrbench.retrieve.rerank_dispatch import build_reranker, check_first_stage

ModelInput = str | ModelSpec | object  # a name, a resolved spec, or a model object (models/protocols.py)


@dataclass(frozen=True)
class ResolvedModel:
    """What ``--model`` / ``evaluate(model=...)`` named, resolved once: a spec for names, else the object."""

    requested: str  # as results record it (settings' "requested" model)
    spec: ModelSpec | None = None
    obj: object | None = None

    @property
    def is_object(self) -> bool:
        return self.spec is None


def resolve(model: ModelInput, kind: str | None = None, revision: str | None = None) -> ResolvedModel:
    """Unknown names fail here, before anything slow starts. ``kind`` (``--model-kind``): the kind of a checkpoint
    whose files cannot tell; it never overrides what they or an alias say (one error line when it contradicts).
    ``revision`` (``--revision``): the Hub revision whose files tell a Hub id's kind."""
    if isinstance(model, ResolvedModel):
        return model if kind is None else resolve(model.spec or model.obj, kind)
    if isinstance(model, str):
        return ResolvedModel(model, spec=resolve_model(model, kind, revision))
    if isinstance(model, ModelSpec):
        return ResolvedModel(
            model.alias,
            spec=model if kind is None else replace(model, kind=settled_kind(model.alias, model.kind, kind)),
        )
    if kind is not None:
        raise UserInputError("--model-kind names the kind of a checkpoint; a Python model object is taken as it is")
    from mtrbench.models.protocols import object_name  # deferred: loads torch

    return ResolvedModel(object_name(model), obj=model)


@dataclass
class Legs:
    """First stages loaded once and reused by several pipelines (a sweep's cells)."""

    first: Retriever | None = None  # a single first stage
    dense: Retriever | None = None  # hybrid legs
    sparse: Retriever | None = None


def build_retriever(
    model: ModelInput, options: RetrieverOptions | None = None, *, model_kind: str | None = None, **overrides: object
) -> Retriever:
    """``overrides`` replace single option fields: ``build_retriever("minilm", device="cpu")``; ``model_kind``: the
    kind of a checkpoint whose files cannot tell (``--model-kind``)."""
    options = (options or RetrieverOptions()).with_values(**overrides)
    return assemble(resolve(model, model_kind, options.loading.revision), options)


def load_legs(model: ResolvedModel, options: RetrieverOptions) -> Legs:
    """The first-stage models, loaded once (hybrid: both legs)."""
    if model.spec is not None and model.spec.kind == "hybrid":
        return Legs(
            dense=_load(resolve(model.spec.model_id), options), sparse=_load(resolve(model.spec.doc_model_id), options)
        )
    return Legs(first=_load(model, options))


def assemble(model: ResolvedModel, options: RetrieverOptions, legs: Legs | None = None) -> Retriever:
    """The retriever with every pipeline stage; ``legs`` reuses loaded first stages (a new cell of a sweep)."""
    stages = options.pipeline
    check_first_stage(model.spec)  # a reranker alias as --model: one error line
    _check_pipeline(model, stages)
    _check_kind(model, options.scale, options.loading.sparse_top_k)
    retriever: Retriever
    if stages.chunking:
        chunking = Chunking.parse(stages.chunking)  # with chunking, candidate_k counts the children retrieved
        inner = _first_stage(model, options, replace(stages, candidate_k=None), legs)
        # strategy 2 scores the candidate parents with the same model over their own text: a second index
        parents = _first_stage(model, options, replace(stages, candidate_k=None), None) if stages.rank_parents else None
        retriever = ParentChildRetriever(inner, chunking, candidate_k=stages.candidate_k, parent_scorer=parents)
    else:
        retriever = _first_stage(model, options, stages, legs)
    if stages.rerank:  # a cross-encoder, monoT5, a yes/no LLM, MaxSim or a listwise LLM, by the name's kind
        retriever = build_reranker(retriever, stages, options.loading)
    return retriever


def _check_pipeline(model: ResolvedModel, stages: PipelineOptions) -> None:
    if stages.rank_parents and not stages.chunking:
        raise UserInputError("--rank-parents rescores the parents of retrieved children: it needs --chunking")
    hybrid = model.spec is not None and model.spec.kind == "hybrid"
    if not hybrid and stages.alpha is not None:
        raise UserInputError(f"--alpha applies to hybrid models (hybrid:DENSE+bm25), not '{model.requested}'")
    if not hybrid and stages.candidate_k is not None and not stages.chunking:
        raise UserInputError(
            f"--candidate-k applies to hybrid models (hybrid:DENSE+bm25) and --chunking, not '{model.requested}'"
        )
    if model.is_object and (stages.chunking or stages.rerank):
        raise UserInputError("--chunking and --rerank wrap named models; a Python model object is evaluated alone")


# Scale options (flag, ScaleOptions field) a kind's search has no path for: refused before anything loads.
_NO_SCALE_PATH = {
    SPARSE: (("--search-memory", "search_memory"), ("--ray", "ray")),
    MULTI_VECTOR: (("--search-memory", "search_memory"), ("--ray", "ray")),
}
_KIND_NAMES = {SPARSE: "learned sparse", MULTI_VECTOR: "multi-vector (late-interaction)"}


def _check_kind(model: ResolvedModel, scale: ScaleOptions, sparse_top_k: int | None = None) -> None:
    """Options a model's kind (or a hybrid leg's) has no path for: one error line before loading."""
    if model.spec is None:
        if sparse_top_k is not None:
            raise UserInputError("--sparse-top-k prunes learned sparse vectors; a Python model object has none")
        return
    specs = [model.spec]
    if model.spec.kind == HYBRID:
        specs = [resolve_model(model.spec.model_id), resolve_model(model.spec.doc_model_id)]
    if sparse_top_k is not None and not any(spec.kind == SPARSE for spec in specs):
        raise UserInputError(
            f"--sparse-top-k prunes learned sparse vectors; '{model.requested}' has no learned sparse model, "
            "which would ignore it"
        )
    for spec in specs:
        what = f"'{spec.alias}' is a {_KIND_NAMES.get(spec.kind, spec.kind)} model"
        if spec.kind in _KIND_NAMES and (scale.index or "").startswith("faiss"):
            raise UserInputError(
                f"--index {scale.index}: {what}; faiss indexes single vectors (dense models): "
                f"use its own index or exact search (docs/model-kinds.md)"
            )
        for flag, field in _NO_SCALE_PATH.get(spec.kind, ()):
            if getattr(scale, field) is not None:
                raise UserInputError(f"{flag}: {what}, which has no {flag} search path; search it without {flag}")


def _first_stage(
    model: ResolvedModel, options: RetrieverOptions, stages: PipelineOptions, legs: Legs | None
) -> Retriever:
    if model.spec is not None and model.spec.kind == "hybrid":
        from mtrbench.retrieve.hybrid import DEFAULT_ALPHA, HybridRetriever  # deferred: loads numpy

        legs = legs if legs is not None and legs.dense is not None else load_legs(model, options)
        dense, sparse = legs.dense, legs.sparse
        assert dense is not None and sparse is not None, "a hybrid model loads both legs"
        return HybridRetriever(
            dense,
            sparse,
            alpha=DEFAULT_ALPHA if stages.alpha is None else stages.alpha,
            candidate_k=stages.candidate_k,
        )
    if legs is not None and legs.first is not None:
        return legs.first
    return _load(model, options)


def _load(model: ResolvedModel, options: RetrieverOptions) -> Retriever:
    """One model, no pipeline stage."""
    loading, scale = options.loading, options.scale
    if model.obj is not None:
        from mtrbench.retrieve.objects import retriever_from_object  # deferred: loads torch

        return retriever_from_object(model.obj, loading, scale)
    spec = model.spec
    assert spec is not None, "a resolved model has a spec or an object"
    if spec.kind == "lexical":
        from mtrbench.retrieve.sparse import BM25Retriever  # deferred: loads numpy

        return BM25Retriever(show_progress=loading.show_progress)
    if spec.kind == "dual":
        from mtrbench.retrieve.dual import DualEncoderRetriever  # deferred: loads torch

        return DualEncoderRetriever(spec, loading, scale)
    if spec.kind == SPARSE:
        from mtrbench.retrieve.learned_sparse import LearnedSparseRetriever  # deferred: loads torch and scipy

        return LearnedSparseRetriever(spec, loading, scale)
    if spec.kind == MULTI_VECTOR:
        from mtrbench.retrieve.late_interaction import MultiVectorRetriever  # deferred: loads torch

        return MultiVectorRetriever(spec, loading, scale)
    from mtrbench.retrieve.dense import DenseRetriever  # deferred: loads torch

    return DenseRetriever(spec, loading, scale)


__all__ = [
    "ModelInput",
    "ResolvedModel",
    "Legs",
    "resolve",
    "build_retriever",
    "load_legs",
    "assemble",
    "LoadingOptions",
    "ScaleOptions",
    "PipelineOptions",
    "RetrieverOptions",
]
