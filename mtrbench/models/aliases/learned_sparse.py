"""Learned sparse retrievers (SparseEncoder checkpoints: SPLADE, DiSCo)."""

from __future__ import annotations

from mtrbench.models.spec import ModelSpec

SPECS: tuple[ModelSpec, ...] = ()
