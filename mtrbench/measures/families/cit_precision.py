"""Citation precision (CORAL §3.4 after ALCE), with the task's gold passages deciding what a citation supports."""

from __future__ import annotations

from mtrbench.measures.generation import GenerationFamily, TurnText, cited_documents, statements


def citation_precision(turn: TurnText, gold: set[str]) -> float:
    """Share of the answer's citations (each statement's distinct labels) that point to a gold passage; a label
    beyond the passages shown counts as a wrong citation. No citation: 0."""
    cited = [d for s in statements(turn.answer) for d in cited_documents(s, turn.passages)]
    if not cited:
        return 0.0
    return sum(1 for d in cited if d is not None and d in gold) / len(cited)


class CitPrecision(GenerationFamily):
    name, label, aliases, key_stem, order = (
        "cit_precision",
        "CitPrec",
        ("citation_precision", "citprecision"),
        "cit_precision",
        113,
    )
    uses_relevance_level = True
    needs_references = False
    definition = (
        "share of the answer's citations (distinct labels per statement) that point to a gold "
        "passage; labels beyond the passages shown count as wrong"
    )
    citation = "CORAL (Cheng et al., 2024) §3.4, after ALCE (Gao et al., EMNLP 2023) with gold passages as support"

    def turn_value(self, turn: TurnText, gold: set[str]) -> float:
        return citation_precision(turn, gold)


FAMILY = CitPrecision()
