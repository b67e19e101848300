"""BLEU-1 of a turn's answer against its reference answers (CORAL §3.4, Tables 3 and 5), by sacrebleu."""

from __future__ import annotations

from functools import cache

from mtrbench.measures.generation import GenerationFamily, TurnText, strip_citations


@cache
def _bleu1():
    from sacrebleu.metrics import BLEU

    # Unigram BLEU with sacrebleu's defaults otherwise: 13a tokenization, case-sensitive, brevity penalty,
    # "exp" smoothing (which only matters when no unigram matches at all: the score is then 0).
    return BLEU(max_ngram_order=1, effective_order=True)


class Bleu1(GenerationFamily):
    name, label, aliases, key_stem, order = "bleu", "BLEU-1", ("bleu1", "bleu_1"), "bleu_1", 110
    definition = (
        "unigram BLEU of the answer against the reference answers (sacrebleu sentence_score, "
        "max_ngram_order=1, 13a tokens, brevity penalty), on a 0-1 scale; citation marks removed"
    )
    citation = "Papineni et al., ACL 2002; sacrebleu (Post, WMT 2018); as reported by CORAL (Cheng et al., 2024)"

    def turn_value(self, turn: TurnText, gold: set[str]) -> float:
        refs = [strip_citations(r) for r in turn.references]
        return _bleu1().sentence_score(strip_citations(turn.answer), refs).score / 100.0


FAMILY = Bleu1()
