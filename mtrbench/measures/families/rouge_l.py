"""ROUGE-L F-measure of a turn's answer against its reference answers (CORAL §3.4), by rouge-score."""

from __future__ import annotations

from functools import cache

from mtrbench.measures.generation import GenerationFamily, TurnText, strip_citations


@cache
def _scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"])  # the library's defaults: no stemming, its own tokenizer


class RougeL(GenerationFamily):
    name, label, aliases, key_stem, order = "rouge_l", "ROUGE-L", ("rougel",), "rouge_l", 111
    definition = (
        "ROUGE-L F-measure (longest common subsequence) of the answer against the reference answers, "
        "best reference (rouge-score score_multi); citation marks removed"
    )
    citation = "Lin, ROUGE, 2004; rouge-score (Google Research); as reported by CORAL (Cheng et al., 2024)"

    def turn_value(self, turn: TurnText, gold: set[str]) -> float:
        refs = [strip_citations(r) for r in turn.references]
        return float(_scorer().score_multi(refs, strip_citations(turn.answer))["rougeL"].fmeasure)


FAMILY = RougeL()
