"""Late-interaction retrievers (MultiVectorEncoder checkpoints: ColBERT)."""

from __future__ import annotations

from mtrbench.models.spec import ModelSpec

SPECS: tuple[ModelSpec, ...] = ()
