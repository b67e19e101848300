"""Descriptive statistics of a task split, as the seed papers tabulate them
(MTR-SUITE Table 2, CORAL Table 4). Lengths are whitespace-separated words, model-independent."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from mtrbench.data.model import ASSISTANT, TaskData


def _summary(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "median": 0.0, "min": 0, "max": 0}
    return {
        "mean": round(statistics.mean(values), 2),
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
    }


def task_stats(task: TaskData, relevance_level: int = 1) -> dict[str, Any]:
    """``relevance_level``: the card's; a document is relevant at a grade >= it (``relevant_per_query``,
    ``queries_without_gold``), as the binary measures count it."""
    turns_per_conv: dict[str, int] = defaultdict(int)
    switches: dict[str, Any] = {}
    for q in task.queries:
        turns_per_conv[q.conversation_id] += 1
        switch = q.meta.get("switch_turn")
        if isinstance(switch, int) and switch > 0:
            switches[q.conversation_id] = switch
    answers = [len(a.split()) for q in task.queries for a in q.answers]
    assistant_history = [len(m.content.split()) for q in task.queries for m in q.history if m.role == ASSISTANT]
    relevant = [sum(1 for g in q.qrels.values() if g >= relevance_level) for q in task.queries]
    return {
        "task": task.name,
        "split": task.split,
        "corpus_size": len(task.corpus),
        "conversations": len(turns_per_conv),
        "turns": len(task.queries),
        "turns_per_conversation": _summary(list(turns_per_conv.values())),
        "words_per_question": _summary([len(q.query.split()) for q in task.queries]),
        "words_per_answer": _summary(answers or assistant_history),
        "words_per_history": _summary([sum(len(m.content.split()) for m in q.history) for q in task.queries]),
        "conversations_with_topic_switch": len(switches),
        "queries_with_gold_rewrite": sum(1 for q in task.queries if q.gold_rewrite),
        "relevance_level": relevance_level,
        "queries_without_gold": sum(1 for n in relevant if n == 0),
        "relevant_per_query": _summary([n for n in relevant if n > 0]),
        "queries_with_candidate_pool": sum(1 for q in task.queries if q.candidate_doc_ids is not None),
        **task.extra_stats,
        "loader_warnings": dict(task.warnings),
    }
