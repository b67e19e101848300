"""The algorithmic metrics of one instance, in the official layout: ``{name: [value per target or passage]}``.

Recall, RougeL_stemFalse, BertscoreP, BertscoreR and Length get one value per target; BertKPrec and
Extractiveness_RougeL one per context passage (no passage: no key, as officially). RB_agg is added when
Recall, RougeL_stemFalse, BertscoreR and BertKPrec are all asked, as ``run_algorithmic.process`` does.
"""

from __future__ import annotations

from collections.abc import Sequence

from mtrbench.formats.mtrag_eval import MtragTask
from mtrbench.judge.mtrag.aggregate import rb_agg
from mtrbench.judge.mtrag.bertscore import BertScorer
from mtrbench.judge.mtrag.lexical import extractiveness_rouge, length, rouge_l, token_recall
from mtrbench.judge.mtrag.names import ALGORITHMIC_METRICS, BERTSCORE_METRICS

RB_AGG_PARTS = ("Recall", "RougeL_stemFalse", "BertscoreR", "BertKPrec")
PER_PASSAGE = ("BertKPrec", "Extractiveness_RougeL")

Metrics = dict[str, list[float]]


def _bertscore(tasks: Sequence[MtragTask], metrics: Sequence[str], scorer: BertScorer) -> list[Metrics]:
    """All BERTScore pairs of all tasks in one library call."""
    pairs: list[tuple[int, str, str, str]] = []  # (task index, kind, candidate, reference)
    for index, task in enumerate(tasks):
        if "BertscoreP" in metrics or "BertscoreR" in metrics:
            pairs += [(index, "target", task.prediction, t.text) for t in task.targets]
        if "BertKPrec" in metrics:
            pairs += [(index, "passage", task.prediction, c.text) for c in task.contexts]
    scores = scorer.precision_recall([p[2] for p in pairs], [p[3] for p in pairs])
    out: list[Metrics] = [{} for _ in tasks]
    for (index, kind, _, _), (precision, recall) in zip(pairs, scores):
        if kind == "passage":
            out[index].setdefault("BertKPrec", []).append(precision)
            continue
        if "BertscoreP" in metrics:
            out[index].setdefault("BertscoreP", []).append(precision)
        if "BertscoreR" in metrics:
            out[index].setdefault("BertscoreR", []).append(recall)
    return out


def algorithmic_metrics(tasks: Sequence[MtragTask], metrics: Sequence[str], scorer: BertScorer | None) -> list[Metrics]:
    """Per task (in order), the asked algorithmic metrics; ``scorer`` is needed for the BERTScore ones."""
    bert = (
        _bertscore(tasks, metrics, scorer)
        if scorer is not None and set(metrics) & set(BERTSCORE_METRICS)
        else [{} for _ in tasks]
    )
    results: list[Metrics] = []
    for task, bert_values in zip(tasks, bert):
        answer = task.prediction
        values: Metrics = {}
        for name in ALGORITHMIC_METRICS:
            if name not in metrics:
                continue
            if name == "Recall":
                values[name] = [token_recall(answer, t.text) for t in task.targets]
            elif name == "RougeL_stemFalse":
                values[name] = [rouge_l(answer, t.text) for t in task.targets]
            elif name in bert_values:
                values[name] = bert_values[name]
            elif name == "Extractiveness_RougeL" and task.contexts:
                values[name] = [extractiveness_rouge(answer, c.text) for c in task.contexts]
            elif name == "Length":
                values[name] = [length(answer) for _ in task.targets]
        if all(m in metrics for m in RB_AGG_PARTS) and task.targets:
            values["RB_agg"] = [rb_agg(values)]
        results.append(values)
    return results
