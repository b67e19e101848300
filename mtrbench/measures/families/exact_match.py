"""Exact match of a short answer with one of its reference answers (SQuAD v1.1)."""

from __future__ import annotations

from mtrbench.measures.generation import GenerationFamily, TurnText, squad_normalize, strip_citations


class ExactMatch(GenerationFamily):
    name, label, aliases, key_stem, order = "exact_match", "EM", ("exact_match", "exactmatch"), "exact_match", 115
    definition = "1 if the answer equals a reference after SQuAD normalization, else 0; citation marks removed"
    citation = "Rajpurkar et al., SQuAD, EMNLP 2016 (official v1.1 evaluation)"

    def turn_value(self, turn: TurnText, gold: set[str]) -> float:
        answer = squad_normalize(strip_citations(turn.answer))
        return float(any(answer == squad_normalize(strip_citations(r)) for r in turn.references))


FAMILY = ExactMatch()
