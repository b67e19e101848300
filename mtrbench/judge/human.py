"""``judge run --human-labels FILE``: the judge's mean corrected by human labels of some of the same turns (PPI).

A human label names its turn by the judge item's key (``<generator>|<qid>``) or, when one generator's answers are
judged, by the turn id alone. Ratings are on RAD-Bench's 1-10 scale, verdicts 1/0 (correct/incorrect, yes/no,
true/false). A human-labelled turn the judge failed on has no LLM value: it is left out of the estimate and
counted (see docs/ppi.md).

The file is read twice before the judge is asked: alone (``check_human_labels``: labels on the scale), then
against the items to judge (``check_label_ids``: every id one of them, no turn labelled twice, two labels at least),
so that a bad file never fails after every reply has been paid for."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from mtrbench.analyses.ppi import LabelScale, PPIEstimate, ppi_mean, read_human_labels
from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.judge.engine import JudgedTurn, JudgeItem

SCALES = {"rating": LabelScale.integers(1, 10, "rating 1-10"), "verdict": LabelScale.binary("verdict")}


@dataclass(frozen=True)
class JudgePPI:
    estimate: PPIEstimate
    human_labels: int  # labels read from the file
    on_failed_turns: int  # of those, turns the judge failed on: left out

    def as_dict(self) -> dict[str, object]:
        return {**self.estimate.as_dict(), "human_labels": self.human_labels, "on_failed_turns": self.on_failed_turns}

    def describe(self) -> str:
        e = self.estimate
        left_out = f"; {self.on_failed_turns} on turns the judge failed, left out" if self.on_failed_turns else ""
        return (
            f"with {e.labelled} human labels (PPI, {e.confidence:.0%}): judge alone {e.llm_mean:.3f} over "
            f"{e.items} turns; PPI {e.ppi_mean:.3f} [{e.ppi_low:.3f}, {e.ppi_high:.3f}]; humans alone "
            f"{e.human_mean:.3f} [{e.human_low:.3f}, {e.human_high:.3f}]{left_out}"
        )


def check_human_labels(path: str, mode: str | None) -> None:
    """The file's labels on the mode's scale, read before any judge is asked (the ids are checked later)."""
    if mode is None:
        raise UserInputError("--human-labels compares the judge with humans: give --judge rating or verdict")
    read_human_labels(path, SCALES[mode])


def _labels_by_key(path: str, mode: str, items: Sequence[JudgeItem]) -> tuple[dict[str, float], dict[str, float]]:
    """(the file's labels by the id it gives, the same by item key). An id names an item by its key
    (``<generator>|<qid>``) or, when one generator's answer to the turn is judged, by the turn id."""
    by_qid = Counter(item.qid for item in items)
    ids = {item.key: item.key for item in items}
    ids.update({item.qid: item.key for item in items if by_qid[item.qid] == 1})
    labels = read_human_labels(path, SCALES[mode], known_ids=ids)
    human = {ids[item]: value for item, value in labels.items()}
    if len(human) < len(labels):
        raise DataError(f"{path}: a turn is labelled twice (once by its key, once by its turn id)")
    return labels, human


def check_label_ids(path: str, mode: str, items: Sequence[JudgeItem]) -> None:
    """Before any request: each label names one of ``items`` (an unknown id is one error naming the file and line),
    no turn is labelled twice, and the file holds the two labels PPI needs at least."""
    labels, _ = _labels_by_key(path, mode, items)
    if len(labels) < 2:
        raise DataError(f"{path}: PPI needs at least two labelled items, the file labels {len(labels)}")


def judge_ppi(turns: Sequence[JudgedTurn], mode: str, path: str, alpha: float = 0.05) -> JudgePPI:
    """PPI of the judge's mean over its answered turns, with the human labels in ``path``."""
    labels, human = _labels_by_key(path, mode, [t.item for t in turns])
    llm = {t.item.key: float(t.value) for t in turns if t.ok and t.value is not None}
    answered = {key: value for key, value in human.items() if key in llm}
    return JudgePPI(ppi_mean(llm, answered, alpha), len(labels), len(human) - len(answered))
