"""Rerankers (cross-encoders, yes/no-logit LLM rerankers, monoT5): reranking stages only, never a first stage."""

from __future__ import annotations

from mtrbench.models.spec import ModelSpec

SPECS: tuple[ModelSpec, ...] = ()
