"""Rerankers (cross-encoders, yes/no-logit LLM rerankers, monoT5): reranking stages only (``--rerank NAME``), never
a first stage. Which recipe scores them is read from the checkpoint's architecture (retrieve/rerank_dispatch.py).
Metadata from the model cards."""

from __future__ import annotations

from mtrbench.models.spec import CROSS_ENCODER, ModelSpec

_QWEN3_CARD = "https://huggingface.co/Qwen/Qwen3-Reranker-0.6B"
_MONOT5_PAPER = "https://aclanthology.org/2020.findings-emnlp.63/"

SPECS: tuple[ModelSpec, ...] = (
    ModelSpec(
        alias="qwen3-reranker-0.6b",
        kind=CROSS_ENCODER,
        model_id="Qwen/Qwen3-Reranker-0.6B",
        description="Qwen3-Reranker 0.6B: causal LM scored from yes/no logits",
        family="Qwen3-Reranker",
        parameters=600_000_000,
        max_tokens=32768,
        license="apache-2.0",
        release_date="2025-06-05",
        reference=_QWEN3_CARD,
    ),
    ModelSpec(
        alias="qwen3-reranker-4b",
        kind=CROSS_ENCODER,
        model_id="Qwen/Qwen3-Reranker-4B",
        description="Qwen3-Reranker 4B: causal LM scored from yes/no logits",
        family="Qwen3-Reranker",
        parameters=4_000_000_000,
        max_tokens=32768,
        license="apache-2.0",
        release_date="2025-06-05",
        reference="https://huggingface.co/Qwen/Qwen3-Reranker-4B",
    ),
    ModelSpec(
        alias="monot5-base",
        kind=CROSS_ENCODER,
        model_id="castorini/monot5-base-msmarco",
        description="monoT5 base (MS MARCO, 100k steps): T5 scored from true/false logits",
        family="monoT5",
        parameters=220_000_000,
        max_tokens=512,
        release_date="2020-11-01",
        training_data=("MS MARCO passage",),
        reference=_MONOT5_PAPER,
    ),
    ModelSpec(
        alias="monot5-3b",
        kind=CROSS_ENCODER,
        model_id="castorini/monot5-3b-msmarco",
        description="monoT5 3B (MS MARCO): T5 scored from true/false logits",
        family="monoT5",
        parameters=3_000_000_000,
        max_tokens=512,
        release_date="2021-01-01",
        training_data=("MS MARCO passage",),
        reference=_MONOT5_PAPER,
    ),
    ModelSpec(
        alias="bge-reranker-v2-m3",
        kind=CROSS_ENCODER,
        model_id="BAAI/bge-reranker-v2-m3",
        description="BGE reranker v2 m3: multilingual XLM-RoBERTa cross-encoder",
        family="BGE-Reranker",
        parameters=568_000_000,
        max_tokens=8192,
        license="apache-2.0",
        release_date="2024-03-18",
        reference="https://huggingface.co/BAAI/bge-reranker-v2-m3",
    ),
)
