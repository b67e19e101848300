"""Task data built in Python, without files: a corpus, conversations and judgments as plain dicts.

``conversations`` maps a conversation id to its messages in order (``{"role": "user"|"assistant", "content":
...}``); every user message is one evaluated turn, with query id ``<conversation id>_<n>`` (n counts user turns
from 1) unless the message carries a ``"qid"``. ``qrels`` maps query ids to ``{doc_id: grade}``; a user message
may carry ``"rewrite"`` (a gold stand-alone rewrite).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mtrbench.data.cards import DEFAULT_K_VALUES, DEFAULT_METRICS, Source, TaskCard
from mtrbench.data.model import ROLES, USER, ConversationalQuery, Corpus, Message, TaskData
from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.infra.numeric import whole

PYTHON_SOURCE = "python:"


@dataclass(frozen=True)
class PythonTask:
    card: TaskCard
    data: TaskData


def make_task(
    name: str,
    corpus: Mapping[str, str | Mapping[str, str]],
    conversations: Mapping[str, Sequence[Mapping[str, str]]],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    main_score: str = "ndcg_at_10",
    metrics: Sequence[str] = DEFAULT_METRICS,
    k_values: Sequence[int] = DEFAULT_K_VALUES,
    relevance_level: int = 1,
    split: str = "test",
    description: str = "a task built in Python",
) -> PythonTask:
    """A task ``mtrbench.evaluate`` takes like a named one; every problem is one error naming the record."""
    if not name or "/" in name:
        raise DataError(f"task name {name!r}: give a plain name (it names the result files)")
    documents = _corpus(name, corpus)
    queries = [
        q
        for conversation_id, messages in conversations.items()
        for q in _queries(name, str(conversation_id), messages, qrels)
    ]
    if not queries:
        raise DataError(f"task {name}: no user turn to evaluate")
    unknown = sorted({qid for qid in qrels} - {q.qid for q in queries})
    if unknown:
        raise DataError(f"task {name}: qrels for query id(s) no conversation has: {', '.join(unknown[:5])}")
    card = TaskCard(
        name=name,
        description=description,
        format="python",
        source=Source(path=PYTHON_SOURCE + name),
        splits=(split,),
        eval_split=split,
        main_score=main_score,
        metrics=tuple(metrics),
        k_values=tuple(k_values),
        relevance_level=relevance_level,
    )
    return PythonTask(
        card, TaskData(name=name, split=split, corpus=documents, queries=queries, dataset_revision="python")
    )


def _corpus(name: str, corpus: Mapping[str, str | Mapping[str, str]]) -> Corpus:
    ids, titles, texts = [], [], []
    for doc_id, document in corpus.items():
        if isinstance(document, str):
            title, text = "", document
        elif isinstance(document, Mapping) and isinstance(document.get("text"), str):
            title, text = str(document.get("title") or ""), document["text"]
        else:
            raise DataError(f"task {name}: corpus document {doc_id!r} must be a text or {{'title', 'text'}}")
        ids.append(str(doc_id))
        titles.append(title)
        texts.append(text)
    if not ids:
        raise DataError(f"task {name}: the corpus is empty")
    return Corpus(ids, titles, texts)


def _queries(
    name: str, conversation_id: str, messages: Sequence[Mapping[str, str]], qrels: Mapping[str, Mapping[str, int]]
) -> list[ConversationalQuery]:
    history: list[Message] = []
    queries: list[ConversationalQuery] = []
    for n, message in enumerate(messages, 1):
        role, content = message.get("role"), message.get("content")
        if role not in ROLES or not isinstance(content, str):
            raise DataError(
                f"task {name}: conversation {conversation_id} message {n}: needs role user|assistant and a text content"
            )
        if role == USER:
            qid = str(message.get("qid") or f"{conversation_id}_{sum(m.role == USER for m in history) + 1}")
            judged = {
                str(doc): whole(grade, f"task {name}: qrels of {qid}, document {doc}", "grade", UserInputError)
                for doc, grade in (qrels.get(qid) or {}).items()
            }
            queries.append(
                ConversationalQuery(
                    qid=qid,
                    conversation_id=conversation_id,
                    turn_id=len(queries) + 1,
                    history=tuple(history),
                    query=content,
                    gold_rewrite=message.get("rewrite"),
                    qrels=judged,
                )
            )
        history.append(Message(role, content))
    return queries
