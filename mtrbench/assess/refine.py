"""Refined qrels: the task's original judgments, untouched, plus the labels the assessment settled."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mtrbench.assess.log import PairRecords
from mtrbench.formats.qrels import Qrels


def default_relevant_grade(original: Qrels, relevance_level: int) -> int:
    """The grade a "relevant" verdict gets: the task's top grade (DREAM's "yes" means the passage fully
    supports an answer), never below the level the task's binary measures count as relevant."""
    top = max((g for docs in original.values() for g in docs.values()), default=1)
    return max(top, relevance_level, 1)


def new_judgment(records: PairRecords, relevant_grade: int) -> tuple[int, str] | None:
    """(grade, source) for a settled pair; None while it is open (escalated, failed or not yet assessed)."""
    label, source = records.final_label()
    if label is None:
        return None
    if source == "human" and records.human.get("grade") is not None:
        return int(records.human["grade"]), source
    return (relevant_grade if label else 0), source


def refined_qrels(
    original: Qrels, records: Iterable[PairRecords], relevant_grade: int, query_order: Sequence[str] = ()
) -> Qrels:
    """Original judgments always win: a pair the task judged is never overwritten."""
    added: dict[str, dict[str, int]] = {}
    for entry in records:
        judged = new_judgment(entry, relevant_grade)
        if judged is None or entry.doc_id in original.get(entry.qid, {}):
            continue
        added.setdefault(entry.qid, {})[entry.doc_id] = judged[0]
    rank = {qid: n for n, qid in enumerate(query_order)}
    qids = sorted(set(original) | set(added), key=lambda q: (rank.get(q, len(rank)), q))
    out: Qrels = {}
    for qid in qids:
        docs = dict(original.get(qid, {}))
        for doc_id in sorted(added.get(qid, {})):
            docs[doc_id] = added[qid][doc_id]
        out[qid] = docs
    return out
