"""Built-in model aliases by family, one module each; ``retrieve.registry`` puts them after its core aliases
(MiniLM, BGE, E5, GTE, Stella, Dragon, BM25)."""

from __future__ import annotations

from mtrbench.models.aliases import bridge, late_interaction, learned_sparse, llm_embedders, rerankers
from mtrbench.models.spec import ModelSpec


def family_specs() -> tuple[ModelSpec, ...]:
    return (
        *learned_sparse.SPECS,
        *late_interaction.SPECS,
        *bridge.SPECS,
        *llm_embedders.SPECS,
        *rerankers.SPECS,
    )
