"""What the prompts know of a turn: its question, the conversation's earlier questions, its judged relevant passages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mtrbench.data.model import ConversationalQuery, TaskData


@dataclass(frozen=True)
class Turn:
    qid: str
    question: str
    earlier: tuple[str, ...]  # the conversation's earlier questions, oldest first
    passages: tuple[str, ...] = ()  # texts of the judged relevant passages, most relevant first
    doc_ids: tuple[str, ...] = ()


def _cut(text: str, max_chars: int | None) -> str:
    return text if not max_chars or len(text) <= max_chars else text[:max_chars].rstrip() + " ..."


def passage_text(task: TaskData, doc_id: str, max_chars: int | None) -> str | None:
    """The document's title and text, cut to ``max_chars``; None when the corpus lacks it."""
    if doc_id not in task.corpus:
        return None
    return _cut(task.corpus.document_text(task.corpus.position(doc_id)), max_chars)


def relevant_turn(task: TaskData, query: ConversationalQuery, level: int, max_chars: int | None) -> Turn:
    """The turn with the passages its qrels grade ``level`` or higher (highest grade first, then by id) that the
    corpus holds."""
    judged = sorted(((-grade, doc) for doc, grade in query.qrels.items() if grade >= level))
    shown = [(doc, passage_text(task, doc, max_chars)) for _, doc in judged]
    kept = [(doc, text) for doc, text in shown if text is not None]
    return Turn(
        qid=query.qid,
        question=query.query,
        earlier=tuple(query.previous_questions),
        passages=tuple(text for _, text in kept),
        doc_ids=tuple(doc for doc, _ in kept),
    )


def turns_of(task: TaskData, qids: Sequence[str], level: int, max_chars: int | None) -> dict[str, Turn]:
    by_qid = {q.qid: q for q in task.queries}
    return {qid: relevant_turn(task, by_qid[qid], level, max_chars) for qid in qids}
