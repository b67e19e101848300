"""Per-turn and topic-switch breakdowns of per-query metrics."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from mtrbench.measures import Evaluation


class TurnQuery(Protocol):
    """What a breakdown reads of a query; ``data.model.ConversationalQuery`` is one."""

    @property
    def qid(self) -> str: ...

    @property
    def turn_id(self) -> int: ...

    @property
    def meta(self) -> Mapping[str, Any]: ...


def by_turn(evaluation: Evaluation, queries: Sequence[TurnQuery]) -> dict[str, dict[str, float]]:
    groups: dict[int, list[str]] = defaultdict(list)
    for q in queries:
        if q.qid in evaluation.per_query:
            groups[q.turn_id].append(q.qid)
    return {str(turn): {"n": len(qids), **evaluation.mean(qids)} for turn, qids in sorted(groups.items())}


def by_topic_switch(evaluation: Evaluation, queries: Sequence[TurnQuery]) -> dict[str, dict[str, float]] | None:
    """Before / after a hard topic switch, for tasks whose queries carry ``meta['after_switch']``."""
    groups: dict[str, list[str]] = defaultdict(list)
    for q in queries:
        if q.qid in evaluation.per_query and "after_switch" in q.meta:
            groups["after_switch" if q.meta["after_switch"] else "before_switch"].append(q.qid)
    if not groups:
        return None
    return {name: {"n": len(qids), **evaluation.mean(qids)} for name, qids in sorted(groups.items(), reverse=True)}
