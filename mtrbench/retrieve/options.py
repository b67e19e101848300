"""How a retriever is built, by concern: loading one model, running past one device, and the pipeline stages
around the first stage. ``RetrieverOptions.of(device="cpu", alpha=0.5)`` routes flat names to their part."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from mtrbench.infra.errors import UserInputError


@dataclass(frozen=True)
class LoadingOptions:
    """How one model is loaded and run. BM25 reads only ``show_progress``; ``pooling`` and ``similarity`` apply
    to dual encoders only; ``revision`` to single-repository models only."""

    device: str = "auto"  # auto | cpu | cuda | cuda:N
    dtype: str = "auto"  # auto (bf16 on CUDA, fp32 on CPU) | fp32 | fp16 | bf16
    batch_size: int | None = None  # at most this many texts per batch; None: the token budget decides
    token_budget: int | None = None  # tokens per batch, padding included; None: the device's default
    unpad: str = "auto"  # auto | on | off
    engine_mode: str = "auto"  # auto | eager | static | fused (mtrbench.encode.engine)
    max_length: int | None = None  # None: the model's
    revision: str | None = None
    trust_remote_code: bool = False
    cache_dir: str | None = None  # None: $MTRBENCH_CACHE_DIR/embeddings or ~/.cache/mtrbench/embeddings
    use_cache: bool = True
    pooling: str | None = None  # cls | mean | last; None: the model's
    similarity: str | None = None  # dot | cosine; None: the model's
    sparse_top_k: int | None = None  # learned sparse models: keep each text's K largest weights; None: all
    show_progress: bool = True
    # instruction-tuned embedders (serialize/instructions.py): the task description filled into the instruction
    # template (None: the task card's, else the default) and the template itself (None: the alias's)
    instruction: str | None = None
    instruction_template: str | None = None


@dataclass(frozen=True)
class ScaleOptions:
    """Past one device (docs/scale.md), embedding models only."""

    ray: str | None = None  # "local" (a Ray started here) or a cluster address: encode and search on Ray
    ray_workers: int | None = None  # encoding actors / search workers; None: one per GPU, else 2
    search_memory: int | None = None  # bytes: stream the cached embeddings through this footprint
    index: str | None = None  # None/"exact" | faiss:KIND[,name=value...] (approximate, never the default)


@dataclass(frozen=True)
class PipelineOptions:
    """Stages around the first stage (docs/pipelines.md)."""

    alpha: float | None = None  # hybrid only: dense share; None: retrieve.hybrid.DEFAULT_ALPHA
    candidate_k: int | None = None  # hybrid: documents each leg retrieves; chunking: children retrieved
    rerank: str | None = None  # reranking the top rerank_k: a reranker alias, HF id, folder, listwise:MODEL
    rerank_k: int = 100
    rerank_batch_size: int = 32
    rerank_window: int = 20  # listwise:MODEL: documents per LLM request
    rerank_stride: int | None = None  # listwise:MODEL: how far each window moves up; None: half the window
    rerank_llm: object | None = None  # listwise:MODEL: its ListwiseLLM (retrieve/rerank_listwise.py); None: refused
    chunking: str | None = None  # parent-child retrieval: sentences:SIZE:STRIDE
    rank_parents: bool = False  # with chunking: rescore the candidate parents on their own text (H-RAG strategy 2)


_PARTS = {"loading": LoadingOptions, "scale": ScaleOptions, "pipeline": PipelineOptions}


@dataclass(frozen=True)
class RetrieverOptions:
    loading: LoadingOptions = field(default_factory=LoadingOptions)
    scale: ScaleOptions = field(default_factory=ScaleOptions)
    pipeline: PipelineOptions = field(default_factory=PipelineOptions)

    @classmethod
    def of(cls, **values: object) -> RetrieverOptions:
        """Options from flat field names (``device=``, ``ray=``, ``alpha=``...)."""
        return cls().with_values(**values)

    def with_values(self, **values: object) -> RetrieverOptions:
        """A copy with single fields replaced, each routed to the part that owns it."""
        parts = {name: getattr(self, name) for name in _PARTS}
        for key, value in values.items():
            owner = next((name for name, kind in _PARTS.items() if key in {f.name for f in fields(kind)}), None)
            if owner is None:
                raise UserInputError(f"unknown retriever option '{key}' (options: {', '.join(option_names())})")
            parts[owner] = replace(parts[owner], **{key: value})
        return RetrieverOptions(**parts)


def option_names() -> list[str]:
    return [f.name for kind in _PARTS.values() for f in fields(kind)]
