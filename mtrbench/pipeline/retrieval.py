"""Steps 3 and 4 of an evaluation: index the corpus once, then per history serialize, truncate and search."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mtrbench.data.model import TaskData
from mtrbench.formats.run import Run
from mtrbench.pipeline.histories import History
from mtrbench.retrieve.base import Retriever
from mtrbench.search.hits import Hits
from mtrbench.serialize.history import QueryFormat
from mtrbench.serialize.truncate import Truncator


@dataclass
class Retrieved:
    run: Run
    truncation: dict[str, Any]
    seconds: float


def index_corpus(retriever: Retriever, task: TaskData, say: Callable[[str], None]) -> float:
    started = time.perf_counter()
    say(f"Indexing {len(task.corpus):,} documents")
    retriever.index(task.corpus)
    return time.perf_counter() - started


def candidate_pools(task: TaskData) -> list[list[int] | None] | None:
    """Per query, the corpus positions it may retrieve from, when the task restricts them."""
    if all(q.candidate_doc_ids is None for q in task.queries):
        return None
    return [
        None if q.candidate_doc_ids is None else [task.corpus.position(d) for d in q.candidate_doc_ids]
        for q in task.queries
    ]


def hits_to_run(task: TaskData, hits: Hits) -> Run:
    ids = task.corpus.ids
    return {q.qid: {ids[i]: float(s) for i, s in zip(*hits[n])} for n, q in enumerate(task.queries)}


def retrieve(
    retriever: Retriever,
    task: TaskData,
    history: History,
    fmt: QueryFormat,
    truncate: str,
    top_k: int,
    say: Callable[[str], None],
) -> Retrieved:
    started = time.perf_counter()
    truncator = Truncator(retriever.tokenizer, retriever.max_length, prompt=retriever.query_prompt, side=truncate)
    texts = [truncator(history.strategy(q, fmt)) for q in task.queries]
    say(f"Searching {len(texts):,} queries (history={history.name})")
    pools = candidate_pools(task)
    search_queries = getattr(retriever, "search_queries", None)  # model objects: by query id, or the turns
    if search_queries is not None:
        hits = search_queries(task.queries, texts, top_k, pools)
    else:
        hits = retriever.search(texts, top_k, pools)
    return Retrieved(hits_to_run(task, hits), truncator.stats.as_dict(), time.perf_counter() - started)
