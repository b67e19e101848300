"""Human names of the metric keys a leaderboard carries (``judge_score_academic`` -> ``Academic (judge 1-10)``).

Retrieval keys get the measure registry's names (``ndcg_at_10`` -> ``nDCG@10``); judge ratings (RAD-Bench's
reference-guided 1-10 scale) are named by their category; anything else is spelled out from its key, so no
raw key reaches a reader.
"""

from __future__ import annotations

from mtrbench.measures import label as registry_name

JUDGE_PREFIX = "judge_score_"
JUDGE_SCALE = "judge 1-10"
# Keys the registry does not name (cutoff-free measures as papers print them).
PLAIN_NAMES = {
    "mrr": "MRR",
    "map": "MAP",
    "ndcg": "nDCG",
    "recall": "Recall",
    "precision": "Precision",
    "hit_rate": "Hit rate",
    "r_precision": "R-Prec",
}


def metric_name(key: str, short: bool = False) -> str:
    """The name a reader sees; ``short`` drops the scale note (for narrow headers under a caption that has it)."""
    if key.startswith(JUDGE_PREFIX):
        category = key[len(JUDGE_PREFIX) :].replace("_", " ").capitalize()
        return category if short else f"{category} ({JUDGE_SCALE})"
    named = registry_name(key)
    if named != key:
        return named
    if key in PLAIN_NAMES:
        return PLAIN_NAMES[key]
    stem, _, cutoff = key.partition("_at_")
    if cutoff.isdigit():
        return f"{PLAIN_NAMES.get(stem, stem.replace('_', ' '))}@{cutoff}"
    return key.replace("_", " ")


def scale_note(keys: list[str]) -> str:
    """``ratings: judge 1-10`` when judge ratings are among ``keys`` (for a caption), else ''."""
    return f"ratings: {JUDGE_SCALE}" if any(k.startswith(JUDGE_PREFIX) for k in keys) else ""
