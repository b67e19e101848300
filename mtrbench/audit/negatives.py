"""Hard negatives for the discriminability test: the top-ranked documents a retriever (or a run file)
returns for a query that the qrels do not judge relevant at any grade."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.data.model import ConversationalQuery, TaskData
from mtrbench.formats.run import ranked, read_run
from mtrbench.infra.errors import DataError
from mtrbench.retrieve import ResolvedModel, RetrieverOptions, assemble, resolve
from mtrbench.serialize.history import QueryFormat, check_strategy_applies, get_strategy
from mtrbench.serialize.truncate import Truncator


@dataclass
class HardNegatives:
    by_qid: dict[str, list[str]]  # best-ranked first
    source: dict[str, Any]  # what produced them (recorded in the summary)
    notes: Counter = field(default_factory=Counter)


def pick_negatives(ranked_doc_ids: Sequence[str], judged_relevant: set[str], n: int) -> list[str]:
    """The first ``n`` documents of a ranking that are not judged relevant (grade > 0)."""
    out: list[str] = []
    for doc_id in ranked_doc_ids:
        if doc_id not in judged_relevant and doc_id not in out:
            out.append(doc_id)
            if len(out) == n:
                break
    return out


def _relevant(query: ConversationalQuery) -> set[str]:
    return {doc_id for doc_id, grade in query.qrels.items() if grade > 0}


def negatives_from_run(
    run_path: str | Path, task: TaskData, queries: Sequence[ConversationalQuery], n: int
) -> HardNegatives:
    run = read_run(run_path)
    if not set(run) & {q.qid for q in queries}:
        raise DataError(
            f"--negatives-run {run_path}: no query id of task '{task.name}' ({task.split}) is in "
            f"this run (e.g. '{queries[0].qid}')"
        )
    notes: Counter = Counter()
    by_qid: dict[str, list[str]] = {}
    for q in queries:
        ranking = [doc_id for doc_id, _ in ranked(run.get(q.qid, {}))]
        known = [d for d in ranking if d in task.corpus]
        if len(known) < len(ranking):
            notes["run documents not in the corpus (ignored)"] += len(ranking) - len(known)
        if q.qid not in run:
            notes["audited queries missing from the negatives run"] += 1
        by_qid[q.qid] = pick_negatives(known, _relevant(q), n)
    return HardNegatives(by_qid, {"run": str(Path(run_path).resolve())}, notes)


def negatives_from_retriever(
    model: str | ResolvedModel,
    task: TaskData,
    queries: Sequence[ConversationalQuery],
    n: int,
    history: str = "full",
    device: str = "auto",
    show_progress: bool = True,
) -> HardNegatives:
    """Retrieve with any mtrbench model alias (or one resolved already); queries are serialized with a ``--history``
    strategy."""
    resolved = resolve(model)
    strategy = get_strategy(history)
    check_strategy_applies(strategy, task.name, task.has_rewrites)
    options = RetrieverOptions.of(
        device=device if resolved.spec.kind == "dense" else "auto", show_progress=show_progress
    )
    retriever = assemble(resolved, options)
    retriever.index(task.corpus)
    truncator = Truncator(retriever.tokenizer, retriever.max_length, prompt=retriever.query_prompt, side="left")
    texts = [truncator(strategy(q, QueryFormat())) for q in queries]
    candidates = None
    if any(q.candidate_doc_ids is not None for q in queries):
        candidates = [
            None
            if q.candidate_doc_ids is None
            else [task.corpus.position(d) for d in q.candidate_doc_ids if d in task.corpus]
            for q in queries
        ]
    depth = n + max((len(_relevant(q)) for q in queries), default=0)
    hits = retriever.search(texts, depth, candidates)
    ids = task.corpus.ids
    by_qid = {
        q.qid: pick_negatives([ids[i] for i in positions], _relevant(q), n) for q, (positions, _) in zip(queries, hits)
    }
    return HardNegatives(
        by_qid,
        {
            "model": resolved.requested,
            "retriever": retriever.name,
            "revision": retriever.revision,
            "history": strategy.name,
        },
        Counter(),
    )
