"""Citation recall (CORAL §3.4 after ALCE), with the task's gold passages deciding what a citation supports."""

from __future__ import annotations

from mtrbench.measures.generation import GenerationFamily, TurnText, cited_documents, statements


def citation_recall(turn: TurnText, gold: set[str]) -> float:
    """Share of the answer's statements citing at least one gold passage (no statement: 0)."""
    parts = statements(turn.answer)
    if not parts:
        return 0.0
    return sum(1 for s in parts if any(d in gold for d in cited_documents(s, turn.passages) if d)) / len(parts)


class CitRecall(GenerationFamily):
    name, label, aliases, key_stem, order = "cit_recall", "CitRecall", ("citation_recall",), "cit_recall", 112
    uses_relevance_level = True
    needs_references = False
    definition = (
        "share of the answer's statements (sentences) that cite a gold passage ([n] = the n-th "
        "passage shown); a statement without citation counts as unsupported"
    )
    citation = "CORAL (Cheng et al., 2024) §3.4, after ALCE (Gao et al., EMNLP 2023) with gold passages as support"

    def turn_value(self, turn: TurnText, gold: set[str]) -> float:
        return citation_recall(turn, gold)


FAMILY = CitRecall()
