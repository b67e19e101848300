"""Token F1 of a short answer against its reference answers (SQuAD v1.1)."""

from __future__ import annotations

from collections import Counter

from mtrbench.measures.generation import GenerationFamily, TurnText, squad_normalize, strip_citations


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD v1.1's ``f1_score`` exactly: tokens shared (with multiplicity) after SQuAD normalization; none
    shared gives 0, including when both texts normalize to nothing (an empty answer scores 0 against an
    empty or article-only reference, as in the official evaluate-v1.1.py)."""
    predicted, gold = squad_normalize(prediction).split(), squad_normalize(reference).split()
    common = sum((Counter(predicted) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


class TokenF1(GenerationFamily):
    name, label, aliases, key_stem, order = "token_f1", "TokenF1", ("f1",), "token_f1", 114
    definition = (
        "harmonic mean of token precision and recall against the best reference, after SQuAD "
        "normalization (lower case, no punctuation or articles); no token shared (both empty "
        "included) gives 0, as SQuAD v1.1's evaluate script; citation marks removed"
    )
    citation = "Rajpurkar et al., SQuAD, EMNLP 2016 (official v1.1 evaluation)"

    def turn_value(self, turn: TurnText, gold: set[str]) -> float:
        answer = strip_citations(turn.answer)
        return max(token_f1(answer, strip_citations(r)) for r in turn.references)


FAMILY = TokenF1()
