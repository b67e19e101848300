"""A corpus that lacks judged passages (a pooled subset of TREC iKAT's 116.8M passages, say).

Loading a task against such a corpus drops the judgments naming a passage outside it (counted in the task's
warnings). mtrbench's trec_eval protocol scores what is left; an official protocol scores every judgment, as the
organisers do: a judged passage the corpus lacks cannot be retrieved, but it is still in the ideal ranking and the
recall denominators. Either way the result records how many judgments name a passage outside the corpus
(``partial_corpus`` in the result JSON) and the eval table says so (docs/protocols.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from mtrbench.data import load_task
from mtrbench.data.cards import TaskCard
from mtrbench.data.model import TaskData
from mtrbench.data.validate import UNKNOWN_QRELS

KEY = "partial_corpus"  # where a result records it (beside corpus_size)
# The loader's warning, reworded once the dropped judgments are scored again (an official protocol).
SCORED_ANYWAY = "judgments naming passages not in the corpus (scored as judged: official protocol)"


@dataclass(frozen=True)
class PartialCorpus:
    judged: int  # judgments (turn, passage) of the split's qrels
    not_in_corpus: int  # of them, naming a passage the corpus lacks
    scored: bool  # those counted all the same (an official protocol), else left out (trec_eval)

    def note(self) -> str:
        """What the eval table's title says."""
        how = "scored as judged" if self.scored else "their judgments left out"
        return f"partial corpus: {self.not_in_corpus:,} of {self.judged:,} judged passages not in the corpus ({how})"

    def to_json(self) -> dict[str, Any]:
        return {"judged": self.judged, "not_in_corpus": self.not_in_corpus, "scored": self.scored}

    @classmethod
    def from_result(cls, meta: Mapping[str, Any]) -> PartialCorpus | None:
        """The record of a result's ``mtrbench`` block; None for a full corpus (or a result older than the record)."""
        record = meta.get(KEY)
        if not isinstance(record, Mapping):
            return None
        return cls(int(record["judged"]), int(record["not_in_corpus"]), bool(record["scored"]))


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
