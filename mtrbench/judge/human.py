"""``judge run --human-labels FILE``: the judge's mean corrected by human labels of some of the same turns (PPI).

A human label names its turn by the judge item's key (``<generator>|<qid>``) or, when one generator's answers are
judged, by the turn id alone. Ratings are on RAD-Bench's 1-10 scale, verdicts 1/0 (correct/incorrect, yes/no,
true/false). A human-labelled turn the judge failed on has no LLM value: it is left out of the estimate and
counted (see docs/ppi.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from mtrbench.analyses.ppi import LabelScale, PPIEstimate, ppi_mean, read_human_labels
from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.judge.engine import JudgedTurn

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


def judge_ppi(turns: Sequence[JudgedTurn], mode: str, path: str, alpha: float = 0.05) -> JudgePPI:
    """PPI of the judge's mean over its answered turns, with the human labels in ``path``."""
    by_qid = Counter(t.item.qid for t in turns)
    ids = {t.item.key: t.item.key for t in turns}
    ids.update({t.item.qid: t.item.key for t in turns if by_qid[t.item.qid] == 1})
    labels = read_human_labels(path, SCALES[mode], known_ids=ids)
    llm = {t.item.key: float(t.value) for t in turns if t.ok and t.value is not None}
    human = {ids[item]: value for item, value in labels.items()}
    if len(human) < len(labels):
        raise DataError(f"{path}: a turn is labelled twice (once by its key, once by its turn id)")
    answered = {key: value for key, value in human.items() if key in llm}
    return JudgePPI(ppi_mean(llm, answered, alpha), len(labels), len(human) - len(answered))
