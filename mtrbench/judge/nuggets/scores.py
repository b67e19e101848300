"""The four nugget scores of one answer, with nuggetizer's definitions (``core/metrics.py``).

For an answer whose turn has nuggets N (V of them vital), each labelled support, partial_support or not_support:

* ``strict_vital`` = (vital nuggets labelled support) / |V|;
* ``vital`` = (vital support + 0.5 x vital partial_support) / |V|;
* ``strict_all`` and ``all``: the same over every nugget, / |N|.

A turn with no vital nugget scores 0.0 on both vital scores (and a turn with no nugget 0.0 on all four), as
nuggetizer does; a nugget labelled ``failed`` counts as not supported. A run's score is the mean over its answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from mtrbench.judge.nuggets.assignment_file import AssignedNugget
from mtrbench.judge.nuggets.labels import PARTIAL_SUPPORT, SUPPORT

SCORE_NAMES = ("strict_vital", "vital", "strict_all", "all")
# the names nuggetizer's metrics write
NUGGETIZER_NAMES = {name: f"{name}_score" for name in SCORE_NAMES}


@dataclass(frozen=True)
class NuggetScores:
    strict_vital: float
    vital: float
    strict_all: float
    all: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def _credit(nuggets: Sequence[AssignedNugget], partial: float) -> float:
    full = sum(1 for n in nuggets if n.assignment == SUPPORT)
    return full + partial * sum(1 for n in nuggets if n.assignment == PARTIAL_SUPPORT)


def _share(credit: float, count: int) -> float:
    return credit / count if count else 0.0


def answer_scores(nuggets: Sequence[AssignedNugget]) -> NuggetScores:
    vital = [n for n in nuggets if n.vital]
    return NuggetScores(
        strict_vital=_share(_credit(vital, 0.0), len(vital)),
        vital=_share(_credit(vital, 0.5), len(vital)),
        strict_all=_share(_credit(nuggets, 0.0), len(nuggets)),
        all=_share(_credit(nuggets, 0.5), len(nuggets)),
    )


def mean_scores(scores: Iterable[NuggetScores]) -> dict[str, float]:
    """The mean of each score (nuggetizer's ``calculate_global_metrics``), with ``n`` answers; NaN when none."""
    rows = list(scores)
    if not rows:
        return {"n": 0, **{name: float("nan") for name in SCORE_NAMES}}
    return {"n": len(rows), **{name: sum(getattr(r, name) for r in rows) / len(rows) for name in SCORE_NAMES}}
