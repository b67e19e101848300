"""The uniform conversational task model every loader emits (SCHEMAS.md §0).

Ids are always strings. A query is one evaluated user turn: its ``history`` holds the
messages strictly before it, ``query`` the raw current utterance.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import Any

USER = "user"
ASSISTANT = "assistant"
ROLES = (USER, ASSISTANT)
# ConversationalQuery.meta key of a turn's published retrieval reasoning (RECOR's subquestion_reasoning), read by
# the `reasoning` history strategies
GOLD_REASONING = "gold_reasoning"


@dataclass(frozen=True)
class Message:
    role: str
    content: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"message role must be one of {ROLES}, got {self.role!r}")


@dataclass
class ConversationalQuery:
    qid: str
    conversation_id: str
    turn_id: int
    history: tuple[Message, ...]
    query: str
    gold_rewrite: str | None = None
    answers: tuple[str, ...] = ()
    qrels: dict[str, int] = field(default_factory=dict)
    candidate_doc_ids: tuple[str, ...] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def has_positive(self) -> bool:
        return any(grade > 0 for grade in self.qrels.values())

    @property
    def previous_questions(self) -> list[str]:
        return [m.content for m in self.history if m.role == USER]


@dataclass
class Corpus:
    """Column-oriented so a million passages cost three lists, not a million objects."""

    ids: list[str]
    titles: list[str]
    texts: list[str]
    _position: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not (len(self.ids) == len(self.titles) == len(self.texts)):
            raise ValueError("corpus columns differ in length")
        self._position = {doc_id: i for i, doc_id in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, doc_id: str) -> bool:
        return doc_id in self._position

    def position(self, doc_id: str) -> int:
        return self._position[doc_id]

    def document_text(self, i: int, title_separator: str = " ") -> str:
        """Title and text as mteb/beir feed documents to an encoder."""
        title = self.titles[i]
        return f"{title}{title_separator}{self.texts[i]}" if title else self.texts[i]


@dataclass
class TaskData:
    """One split of a task, ready to evaluate."""

    name: str
    split: str
    corpus: Corpus
    queries: list[ConversationalQuery]
    dataset_revision: str | None = None
    warnings: Counter = field(default_factory=Counter)
    # Alternative judgment sets beside each query's qrels, e.g. BRIDGE {"original": ..., "refined": ...}.
    extra_qrels: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    # Counts a loader takes from its source files (TREC iKAT: judgments per grade), shown by `tasks show --stats`.
    extra_stats: dict[str, Any] = field(default_factory=dict)

    def qrels(self) -> dict[str, dict[str, int]]:
        return {q.qid: dict(q.qrels) for q in self.queries if q.qrels}

    @property
    def has_rewrites(self) -> bool:
        return any(q.gold_rewrite for q in self.queries)


def without_queries(task: TaskData, qids: Collection[str]) -> TaskData:
    """The task less the queries ``qids`` (and their alternative judgments); the same object when none go."""
    if not qids:
        return task
    drop = set(qids)
    extra = {
        name: {qid: rels for qid, rels in qrels.items() if qid not in drop} for name, qrels in task.extra_qrels.items()
    }
    return replace(task, queries=[q for q in task.queries if q.qid not in drop], extra_qrels=extra)


def first_conversations(task: TaskData, limit: int) -> TaskData:
    """The queries of the first ``limit`` conversations in the task's own (file) order; the corpus stays whole."""
    kept: list[str] = []
    for q in task.queries:
        if q.conversation_id not in kept:
            if len(kept) == limit:
                continue
            kept.append(q.conversation_id)
    keep = set(kept)
    queries = [q for q in task.queries if q.conversation_id in keep]
    qids = {q.qid for q in queries}
    extra = {
        name: {qid: rels for qid, rels in qrels.items() if qid in qids} for name, qrels in task.extra_qrels.items()
    }
    return replace(task, queries=queries, extra_qrels=extra)
