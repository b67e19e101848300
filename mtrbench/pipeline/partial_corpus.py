"""A corpus that lacks judged passages (a pooled subset of TREC iKAT's 116.8M passages, say).

Loading a task against such a corpus drops the judgments naming a passage outside it (counted in the task's
warnings). mtrbench's trec_eval protocol scores what is left; an official protocol scores every judgment, as the
organisers do: a judged passage the corpus lacks cannot be retrieved, but it is still in the ideal ranking and the
recall denominators. Either way the result records how many judgments name a passage outside the corpus
(``partial_corpus`` in the result JSON) and the eval table says so (docs/protocols.md).
"""

from __future__ import annotations

from dataclasses import replace

from mtrbench.data import load_task
from mtrbench.data.cards import TaskCard
from mtrbench.data.model import TaskData
from mtrbench.data.validate import UNKNOWN_QRELS
from mtrbench.results.partial_corpus import KEY, PartialCorpus

# The loader's warning, reworded once the dropped judgments are scored again (an official protocol).
SCORED_ANYWAY = "judgments naming passages not in the corpus (scored as judged: official protocol)"


def partial_corpus(task: TaskData, scored: bool) -> PartialCorpus | None:
    """What the loader dropped from ``task`` (as loaded), None when no judgment names a passage outside its corpus."""
    dropped = task.warnings.get(UNKNOWN_QRELS, 0)
    if not dropped:
        return None
    kept = sum(len(q.qrels) for q in task.queries)
    return PartialCorpus(kept + dropped, dropped, scored)


def with_every_judgment(task: TaskData, card: TaskCard, data_dir: str | None) -> TaskData | None:
    """``task`` whose turns carry every judgment of its split again, those naming a passage outside the corpus too
    (its qrels read again without the corpus), the loader's warning reworded; None where they cannot be (a loader
    that reads its corpus from the data folder whatever is asked drops them again)."""
    judged = load_task(card, split=task.split, data_dir=data_dir, require_corpus=False)
    if judged.warnings.get(UNKNOWN_QRELS, 0):
        return None
    qrels = {q.qid: q.qrels for q in judged.queries}
    warnings = task.warnings.copy()
    warnings[SCORED_ANYWAY] = warnings.pop(UNKNOWN_QRELS, 0)
    queries = [replace(q, qrels=dict(qrels.get(q.qid, q.qrels))) for q in task.queries]
    return replace(task, queries=queries, warnings=warnings)


__all__ = ["KEY", "SCORED_ANYWAY", "PartialCorpus", "partial_corpus", "with_every_judgment"]
