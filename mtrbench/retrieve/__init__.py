"""Retrievers: dense (sentence-transformers), dual encoders (query + document towers), sparse (BM25),
behind one protocol."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from mtrbench.infra.errors import MtrbenchError
from mtrbench.retrieve.base import Retriever
from mtrbench.retrieve.registry import REGISTRY, ModelSpec, resolve_model
from mtrbench.search.hits import Hits


@dataclass(frozen=True)
class RetrieverOptions:
    """How a retriever is loaded and run. BM25 reads only ``show_progress``; ``pooling`` and ``similarity``
    apply to dual encoders only; ``revision`` to single-repository models only."""

    device: str = "auto"  # auto | cpu | cuda | cuda:N
    dtype: str = "auto"  # auto (bf16 on CUDA, fp32 on CPU) | fp32 | fp16 | bf16
    batch_size: int | None = None  # at most this many texts per batch; None: the token budget decides
    token_budget: int | None = None  # tokens per batch, padding included; None: the device's default
    unpad: str = "auto"  # auto | on | off
    max_length: int | None = None  # None: the model's
    revision: str | None = None
    trust_remote_code: bool = False
    cache_dir: str | None = None  # None: $MTRBENCH_CACHE_DIR/embeddings or ~/.cache/mtrbench/embeddings
    use_cache: bool = True
    pooling: str | None = None  # cls | mean | last; None: the model's
    similarity: str | None = None  # dot | cosine; None: the model's
    show_progress: bool = True
    # Past one device (docs/scale.md), dense models only:
    ray: str | None = None  # "local" (a Ray started here) or a cluster address: encode and search on Ray
    ray_workers: int | None = None  # encoding actors / search workers; None: one per GPU, else 2
    search_memory: int | None = None  # bytes: stream the cached embeddings through this footprint
    index: str | None = None  # None/"exact" | faiss:KIND[,name=value...] (approximate, never the default)
    # Pipeline stages (docs/pipelines.md). Hybrid models only:
    alpha: float | None = None  # dense share; None: retrieve.hybrid.DEFAULT_ALPHA
    candidate_k: int | None = None  # documents each leg retrieves; None: max(top_k, 100)
    # Cross-encoder reranking of the first stage's top rerank_k (any model):
    rerank: str | None = None  # cross-encoder: HF id or local folder
    rerank_k: int = 100
    rerank_batch_size: int = 32
    # Parent-child retrieval: children retrieved (candidate_k of them), parents scored by their best child:
    chunking: str | None = None  # sentences:SIZE:STRIDE
    rank_parents: bool = False  # with chunking: rescore the candidate parents on their own text (H-RAG strategy 2)


# The fields above that belong to the pipeline, not to loading one model.
PIPELINE_FIELDS = ("alpha", "candidate_k", "rerank", "rerank_k", "rerank_batch_size", "chunking", "rank_parents")


def build_retriever(model: str, options: RetrieverOptions | None = None, **overrides) -> Retriever:
    """``overrides`` replace single fields of ``options``: ``build_retriever("minilm", device="cpu")``."""
    options = replace(options or RetrieverOptions(), **overrides)
    if options.rank_parents and not options.chunking:
        raise MtrbenchError("--rank-parents rescores the parents of retrieved children: it needs --chunking")
    if options.chunking:
        from mtrbench.retrieve.chunking import Chunking, ParentChildRetriever

        chunking = Chunking.parse(options.chunking)  # with chunking, --candidate-k counts children
        inner = _first_stage(model, replace(options, candidate_k=None))
        # strategy 2 scores the candidate parents with the same model, over the parents' own text
        parents = _first_stage(model, replace(options, candidate_k=None)) if options.rank_parents else None
        retriever = ParentChildRetriever(inner, chunking, candidate_k=options.candidate_k, parent_scorer=parents)
    else:
        retriever = _first_stage(model, options)
    if options.rerank:
        from mtrbench.retrieve.rerank import CrossEncoderReranker

        retriever = CrossEncoderReranker(retriever, options.rerank, rerank_k=options.rerank_k,
                                         device=options.device, batch_size=options.rerank_batch_size,
                                         show_progress=options.show_progress)
    return retriever


def _first_stage(model: str, options: RetrieverOptions) -> Retriever:
    spec = resolve_model(model)
    if spec.kind != "hybrid" and (options.alpha is not None or options.candidate_k is not None):
        raise MtrbenchError(f"--alpha and --candidate-k apply to hybrid models (hybrid:DENSE+bm25), not '{model}' "
                            f"(--candidate-k also to --chunking)")
    if spec.kind == "hybrid":
        from mtrbench.retrieve.hybrid import DEFAULT_ALPHA, HybridRetriever

        legs = replace(options, alpha=None, candidate_k=None, rerank=None)
        return HybridRetriever(_first_stage(spec.model_id, legs), _first_stage(spec.doc_model_id, legs),
                               alpha=DEFAULT_ALPHA if options.alpha is None else options.alpha,
                               candidate_k=options.candidate_k)
    loading = {k: v for k, v in asdict(options).items() if k not in PIPELINE_FIELDS}
    if spec.kind == "sparse":
        from mtrbench.retrieve.sparse import BM25Retriever

        return BM25Retriever(show_progress=options.show_progress)
    if spec.kind == "dual":
        from mtrbench.retrieve.dual import DualEncoderRetriever

        return DualEncoderRetriever(spec, **loading)
    from mtrbench.retrieve.dense import DenseRetriever

    return DenseRetriever(spec, **loading)


__all__ = ["Hits", "Retriever", "REGISTRY", "ModelSpec", "RetrieverOptions", "resolve_model", "build_retriever"]
