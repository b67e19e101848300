"""Nugget creation, nuggetizer's way: per turn, its relevant passages in batches; each batch revises the list the
previous ones left (at most ``max_nuggets``, most important first); then each batch of nuggets is labelled vital or
okay. A batch whose reply failed leaves the list as it was (as nuggetizer does); a nugget whose label failed is
written ``failed`` (nuggetizer's label for it) and counts as not vital."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mtrbench.judge.nuggets.labels import ASKED_IMPORTANCES, FAILED
from mtrbench.judge.nuggets.nugget_file import Nugget, NuggetSet, Setting
from mtrbench.judge.nuggets.prompts import (
    NUGGET_LIST_FORMAT,
    creation_messages,
    importance_reader,
    label_messages,
    parse_nugget_list,
)
from mtrbench.judge.nuggets.steps import StepAsker, step_item, step_stage, value_of
from mtrbench.judge.nuggets.turns import Turn
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.stage import JSONValue, Stage, StageItem

CREATE, LABEL = "create", "label"
PLACEHOLDER_NUGGET = "a placeholder nugget of about ten words for the cost estimate"


@dataclass(frozen=True)
class CreationSettings:
    max_nuggets: int = 30  # nuggetizer's creator_max_nuggets
    passage_batch: int = 10  # nuggetizer's creator_window_size
    label_batch: int = 10  # nuggetizer's scorer_window_size
    relevance_level: int = 1  # passages judged at least this are the source

    def describe(self, judge: JudgeConfig) -> dict[str, Setting]:
        return {
            "creator_model": judge.model,
            "max_nuggets": self.max_nuggets,
            "passage_batch": self.passage_batch,
            "label_batch": self.label_batch,
            "relevance_level": self.relevance_level,
        }


def batches(count: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(start + size, count)) for start in range(0, count, size)]


def creation_item(turn: Turn, window: int, nuggets: Sequence[str], settings: CreationSettings) -> StageItem:
    start, end = batches(len(turn.passages), settings.passage_batch)[window]
    messages = creation_messages(turn.question, turn.earlier, turn.passages[start:end], nuggets, settings.max_nuggets)
    fields: dict[str, JSONValue] = {"qid": turn.qid, "window": window, "passages": list(turn.doc_ids[start:end])}
    return step_item(f"{CREATE}|{turn.qid}|{window}", messages, parse_nugget_list, NUGGET_LIST_FORMAT, fields)


def label_items(turn: Turn, nuggets: Sequence[str], settings: CreationSettings) -> list[StageItem]:
    items = []
    for n, (start, end) in enumerate(batches(len(nuggets), settings.label_batch)):
        reader = importance_reader(end - start)
        messages = label_messages(turn.question, turn.earlier, nuggets[start:end])
        fields: dict[str, JSONValue] = {"qid": turn.qid, "batch": n, "nuggets": list(nuggets[start:end])}
        items.append(step_item(f"{LABEL}|{turn.qid}|{n}", messages, reader, reader.reply_format, fields))
    return items


def planned_creation(
    turns: Sequence[Turn], judge: JudgeConfig, settings: CreationSettings, from_window: int
) -> list[Stage]:
    """Placeholder stages for the cost estimate: creation windows from ``from_window`` on (with an empty list so
    far) and the labelling of a full list."""
    windows = [
        creation_item(t, w, [], settings)
        for t in turns
        for w in range(from_window, len(batches(len(t.passages), settings.passage_batch)))
    ]
    full = [PLACEHOLDER_NUGGET] * settings.max_nuggets
    labels = [item for t in turns if t.passages for item in label_items(t, full, settings)]
    return [step_stage(CREATE, judge, windows, "windows"), step_stage(LABEL, judge, labels, "label batches")]


def _revise(
    turns: Sequence[Turn],
    current: dict[str, list[str]],
    window: int,
    asker: StepAsker,
    judge: JudgeConfig,
    settings: CreationSettings,
    later: Sequence[Stage],
) -> bool:
    """One creation round: every turn with a ``window``-th passage batch revises its list; False after a dry run."""
    items = [
        creation_item(t, window, current[t.qid], settings)
        for t in turns
        if window < len(batches(len(t.passages), settings.passage_batch))
    ]
    outcome = asker.ask(step_stage(CREATE, judge, items, "windows"), "windows", later)
    if outcome is None:
        return False
    for item in items:
        value = value_of(outcome, item.key)
        if isinstance(value, list):
            current[str(item.fields["qid"])] = [str(v) for v in value][: settings.max_nuggets]
    return True


def create_nuggets(
    turns: Sequence[Turn],
    judge: JudgeConfig,
    settings: CreationSettings,
    asker: StepAsker,
    later: Sequence[Stage] = (),
) -> dict[str, NuggetSet] | None:
    """qid -> its created, labelled nuggets; None after a dry run. ``later``: the placeholder stages of the steps
    after creation, for the cost question."""
    current: dict[str, list[str]] = {t.qid: [] for t in turns}
    rounds = max((len(batches(len(t.passages), settings.passage_batch)) for t in turns), default=0)
    for window in range(rounds):
        rest = [*planned_creation(turns, judge, settings, window + 1), *later]
        if not _revise(turns, current, window, asker, judge, settings, rest):
            return None
    items = [item for t in turns for item in label_items(t, current[t.qid], settings)]
    outcome = asker.ask(step_stage(LABEL, judge, items, "label batches"), "label batches", later)
    if outcome is None:
        return None
    importance = _importance(turns, current, settings, dict((i.key, value_of(outcome, i.key)) for i in items))
    described = settings.describe(judge)
    return {
        t.qid: NuggetSet(
            t.qid,
            t.question,
            tuple(Nugget(text, importance[t.qid][i]) for i, text in enumerate(current[t.qid])),
            described,
        )
        for t in turns
    }


def _importance(
    turns: Sequence[Turn], current: Mapping[str, list[str]], settings: CreationSettings, replies: Mapping[str, object]
) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for t in turns:
        labels: list[str] = []
        for n, (start, end) in enumerate(batches(len(current[t.qid]), settings.label_batch)):
            value = replies.get(f"{LABEL}|{t.qid}|{n}")
            ok = isinstance(value, list) and len(value) == end - start and all(v in ASKED_IMPORTANCES for v in value)
            labels += [str(v) for v in value] if ok and isinstance(value, list) else [FAILED] * (end - start)
        out[t.qid] = labels
    return out
