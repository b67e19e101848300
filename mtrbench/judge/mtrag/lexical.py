"""Recall, RougeL_stemFalse, Extractiveness_RougeL and Length, as the official ``run_algorithmic.py``."""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

from mtrbench.judge.mtrag.text import normalize_text, strip_newline_words


def token_recall(prediction: str, target: str) -> float:
    """Share of the normalized target tokens that the prediction contains (multiset overlap); 0 without overlap."""
    target_tokens = normalize_text(target).split()
    common = Counter(normalize_text(prediction).split()) & Counter(target_tokens)
    shared = sum(common.values())
    return shared / len(target_tokens) if shared else 0.0


@lru_cache(maxsize=2)
def _scorer(use_stemmer: bool):
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=use_stemmer)


def rouge_l(prediction: str, target: str, use_stemmer: bool = False) -> float:
    """ROUGE-L F-measure by the ``rouge-score`` library with its default tokenizer (what ``evaluate``'s
    ``rouge`` metric calls)."""
    return float(_scorer(use_stemmer).score(target, prediction)["rougeL"].fmeasure)


def extractiveness_rouge(prediction: str, passage: str) -> float:
    """1 when the (cleaned) passage appears whole in the (cleaned) prediction, spaces ignored; else ROUGE-L."""
    prediction, passage = strip_newline_words(prediction), strip_newline_words(passage)
    if passage.replace(" ", "") in prediction.replace(" ", ""):
        return 1.0
    return rouge_l(prediction, passage)


def length(prediction: str) -> int:
    """Characters in the prediction."""
    return len(prediction)
