"""The single-vector encoders of the BRIDGE paper's table, in their reference (pyserini) formats."""

from __future__ import annotations

from mtrbench.models.spec import ModelSpec

SPECS: tuple[ModelSpec, ...] = ()
