"""Instruction-tuned decoder LLM embedders (Qwen3-Embedding, e5-mistral, gte-Qwen2, NV-Embed)."""

from __future__ import annotations

from mtrbench.models.spec import ModelSpec

SPECS: tuple[ModelSpec, ...] = ()
