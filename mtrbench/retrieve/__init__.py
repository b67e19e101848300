"""Retrievers: dense (sentence-transformers), dual encoders (query + document towers), sparse (BM25),
behind one protocol."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

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


def build_retriever(model: str, options: RetrieverOptions | None = None, **overrides) -> Retriever:
    """``overrides`` replace single fields of ``options``: ``build_retriever("minilm", device="cpu")``."""
    options = replace(options or RetrieverOptions(), **overrides)
    spec = resolve_model(model)
    if spec.kind == "sparse":
        from mtrbench.retrieve.sparse import BM25Retriever

        return BM25Retriever(show_progress=options.show_progress)
    if spec.kind == "dual":
        from mtrbench.retrieve.dual import DualEncoderRetriever

        return DualEncoderRetriever(spec, **asdict(options))
    from mtrbench.retrieve.dense import DenseRetriever

    return DenseRetriever(spec, **asdict(options))


__all__ = ["Hits", "Retriever", "REGISTRY", "ModelSpec", "RetrieverOptions", "resolve_model", "build_retriever"]
