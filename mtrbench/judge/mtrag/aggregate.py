"""RB_agg: the harmonic mean of BERTScore recall, ROUGE-L and the best BertKPrec, as ``run_algorithmic.rb_agg``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def harmonic_mean_of_three(a: float, b: float, c: float) -> float:
    """3abc / (ab + ac + bc); 0 when any of the three is 0."""
    if a == 0 or b == 0 or c == 0:
        return 0.0
    return 3 * a * b * c / (a * b + a * c + b * c)


def rb_agg(metrics: Mapping[str, Sequence[float | None]]) -> float:
    """From an instance's metric lists: a = (BertscoreR + 1) / 2 (the token Recall when BertscoreR is absent),
    b = RougeL_stemFalse, c = (max BertKPrec + 1) / 2 (a missing passage score counts as 0; c = 0 when there is
    no BertKPrec at all). The first target's values are used, as officially."""
    if metrics.get("BertscoreR"):
        recall = (float(metrics["BertscoreR"][0]) + 1) / 2
    else:
        recall = float(metrics["Recall"][0])
    rouge = float(metrics["RougeL_stemFalse"][0])
    passages = metrics.get("BertKPrec")
    if passages is None:
        extractiveness = 0.0
    else:
        extractiveness = (max(0.0 if v is None else float(v) for v in passages) + 1) / 2 if passages else 0.0
    return harmonic_mean_of_three(recall, rouge, extractiveness)
