"""A run's nugget scores: the mean over its answers, and the same means per turn position, before/after a topic
switch and per conversation (the breakdowns ``mtrbench eval`` reports, from the task's queries)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from mtrbench.analyses.breakdown import TurnQuery, by_topic_switch, by_turn
from mtrbench.judge.nuggets.scores import SCORE_NAMES, NuggetScores, mean_scores
from mtrbench.measures import Evaluation

Means = dict[str, float]  # "n" (answers) and each score's mean


class ConversationQuery(TurnQuery, Protocol):
    """What the breakdowns read of a query; ``data.model.ConversationalQuery`` is one."""

    @property
    def conversation_id(self) -> str: ...


@dataclass
class RunScores:
    """One run (system): its per-answer scores keyed by qid, their mean, and the breakdowns (empty without a task)."""

    run_id: str
    per_answer: dict[str, NuggetScores]
    scores: Means = field(default_factory=dict)
    by_turn: dict[str, Means] = field(default_factory=dict)
    by_topic_switch: dict[str, Means] | None = None
    by_conversation: dict[str, Means] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"scores": self.scores}
        if self.by_turn:
            out["by_turn"] = self.by_turn
        if self.by_topic_switch:
            out["by_topic_switch"] = self.by_topic_switch
        if self.by_conversation:
            out["by_conversation"] = self.by_conversation
        out["per_answer"] = {qid: s.as_dict() for qid, s in self.per_answer.items()}
        return out


def _evaluation(per_answer: Mapping[str, NuggetScores]) -> Evaluation:
    return Evaluation(
        per_query={qid: s.as_dict() for qid, s in per_answer.items()}, excluded=[], metric_keys=list(SCORE_NAMES)
    )


def _by_conversation(per_answer: Mapping[str, NuggetScores], queries: Sequence[ConversationQuery]) -> dict[str, Means]:
    groups: dict[str, list[NuggetScores]] = defaultdict(list)
    for query in queries:
        if query.qid in per_answer:
            groups[query.conversation_id].append(per_answer[query.qid])
    return {conversation: mean_scores(rows) for conversation, rows in groups.items()}


def run_scores(
    run_id: str, per_answer: Mapping[str, NuggetScores], queries: Sequence[ConversationQuery] = ()
) -> RunScores:
    """The run's means; with the task's ``queries``, also per turn position, topic switch and conversation."""
    out = RunScores(run_id, dict(per_answer), mean_scores(per_answer.values()))
    if queries:
        evaluation = _evaluation(per_answer)
        out.by_turn = by_turn(evaluation, queries)
        out.by_topic_switch = by_topic_switch(evaluation, queries)
        out.by_conversation = _by_conversation(per_answer, queries)
    return out
