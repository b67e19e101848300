"""Nugget assignment: each answer against its turn's nuggets, in batches, each nugget labelled support,
partial_support or not_support; a batch whose reply failed is written ``failed`` (nuggetizer's label), which scores
as not supported. The result is one nuggetizer assignment record per answer."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from mtrbench.formats.generations import Generation
from mtrbench.judge.nuggets.assignment_file import AnswerAssignment, AssignedNugget
from mtrbench.judge.nuggets.create import PLACEHOLDER_NUGGET, batches
from mtrbench.judge.nuggets.labels import ASKED_ASSIGNMENTS, FAILED
from mtrbench.judge.nuggets.nugget_file import NuggetSet
from mtrbench.judge.nuggets.prompts import assign_messages, assignment_reader
from mtrbench.judge.nuggets.steps import StepAsker, step_item, step_stage, value_of
from mtrbench.judge.nuggets.turns import Turn
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.stage import JSONValue, Stage, StageItem
from mtrbench.measures.generation import CITATION_MARK

ASSIGN = "assign"
UNIT = "assignment batches"
_MARK_AND_SPACE = re.compile(r"\s*" + CITATION_MARK.pattern)


def without_citations(text: str) -> str:
    """``text`` without its citation marks and the spaces before them ("metres [1]." -> "metres.")."""
    return " ".join(_MARK_AND_SPACE.sub("", text).split())


def answer_text(generation: Generation) -> str:
    """The answer as the judge reads it: citation marks removed."""
    return without_citations(generation.answer)


def response_length(generation: Generation) -> int:
    """Words of the answer without citation marks (TREC RAG's answers carry their length; mtrbench counts words)."""
    return len(answer_text(generation).split())


def assign_items(run_id: str, turn: Turn, generation: Generation, nuggets: Sequence[str], size: int) -> list[StageItem]:
    items = []
    for n, (start, end) in enumerate(batches(len(nuggets), size)):
        reader = assignment_reader(end - start)
        messages = assign_messages(turn.question, turn.earlier, answer_text(generation), nuggets[start:end])
        fields: dict[str, JSONValue] = {"run": run_id, "qid": turn.qid, "batch": n, "nuggets": list(nuggets[start:end])}
        items.append(step_item(f"{ASSIGN}|{run_id}|{turn.qid}|{n}", messages, reader, reader.reply_format, fields))
    return items


def planned_assignment(
    runs: Mapping[str, Mapping[str, Generation]],
    turns: Mapping[str, Turn],
    judge: JudgeConfig,
    max_nuggets: int,
    size: int,
) -> Stage:
    """Placeholder items for the cost estimate: every answer against a full list of nuggets."""
    full = [PLACEHOLDER_NUGGET] * max_nuggets
    items = [
        item
        for run_id, generations in runs.items()
        for qid, generation in generations.items()
        for item in assign_items(run_id, turns[qid], generation, full, size)
    ]
    return step_stage(ASSIGN, judge, items, UNIT)


def assign_nuggets(
    runs: Mapping[str, Mapping[str, Generation]],
    turns: Mapping[str, Turn],
    nuggets: Mapping[str, NuggetSet],
    judge: JudgeConfig,
    size: int,
    asker: StepAsker,
    later: Sequence[Stage] = (),
) -> dict[str, list[AnswerAssignment]] | None:
    """run id -> one assignment record per answer, in the generations' order; None after a dry run."""
    items = [
        item
        for run_id, generations in runs.items()
        for qid, generation in generations.items()
        for item in assign_items(run_id, turns[qid], generation, nuggets[qid].texts(), size)
    ]
    outcome = asker.ask(step_stage(ASSIGN, judge, items, UNIT), UNIT, later)
    if outcome is None:
        return None
    replies = {item.key: value_of(outcome, item.key) for item in items}
    return {
        run_id: [_record(run_id, generation, nuggets[qid], size, replies) for qid, generation in generations.items()]
        for run_id, generations in runs.items()
    }


def _record(
    run_id: str, generation: Generation, nugget_set: NuggetSet, size: int, replies: Mapping[str, object]
) -> AnswerAssignment:
    labels: list[str] = []
    for n, (start, end) in enumerate(batches(len(nugget_set.nuggets), size)):
        value = replies.get(f"{ASSIGN}|{run_id}|{generation.qid}|{n}")
        ok = isinstance(value, list) and len(value) == end - start and all(v in ASKED_ASSIGNMENTS for v in value)
        labels += [str(v) for v in value] if ok and isinstance(value, list) else [FAILED] * (end - start)
    return AnswerAssignment(
        qid=generation.qid,
        nuggets=tuple(AssignedNugget(n.text, n.importance, label) for n, label in zip(nugget_set.nuggets, labels)),
        query=nugget_set.query or generation.question,
        answer_text=answer_text(generation),
        response_length=response_length(generation),
        run_id=run_id,
    )
