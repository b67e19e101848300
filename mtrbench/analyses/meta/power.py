"""Discriminative power (Sakai, SIGIR 2006): how many system pairs a benchmark tells apart.

Every pair of systems gets its achieved significance level (ASL) under one paired test; the
discriminative power is the share of pairs with ASL < alpha. Sorting the ASLs gives the ASL curve: a
curve lower and further left belongs to the measure (or benchmark) that separates more pairs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from mtrbench.analyses.meta.inputs import ScoreMatrix
from mtrbench.analyses.meta.tests import Resampling, Units, pair_asl
from mtrbench.infra.errors import DataError, UserInputError


@dataclass(frozen=True)
class PairASL:
    a: str
    b: str
    mean_a: float
    mean_b: float
    diff: float  # mean_a - mean_b, over queries
    p: float  # achieved significance level, two-sided


@dataclass(frozen=True)
class PowerReport:
    task: str
    measure: str
    test: str
    unit: str
    samples: int
    seed: int
    alpha: float
    exact: bool  # no Monte Carlo error: the t-test, or every sign flip / permutation enumerated
    systems: list[str]
    queries: int
    units: int
    pairs: list[PairASL]
    significant_pairs: int
    discriminative_power: float  # significant_pairs / len(pairs)
    filled_with_zero: dict[str, int] = field(default_factory=dict)

    @property
    def asl_curve(self) -> list[float]:
        return sorted(pair.p for pair in self.pairs)

    def as_dict(self) -> dict:
        return {**asdict(self), "asl_curve": self.asl_curve}


def check_alpha(alpha: float) -> float:
    if not 0 < alpha < 1:
        raise UserInputError(f"--alpha must lie strictly between 0 and 1, got {alpha}")
    return alpha


def check_separable(matrix: ScoreMatrix) -> None:
    """A matrix that no analysis can read: every system scores the same on every query."""
    if np.all(matrix.scores == matrix.scores[0]):
        raise DataError(
            f"{matrix.task} {matrix.measure}: every system scores the same on every query; "
            f"there is nothing to tell apart"
        )


def discriminative_power(matrix: ScoreMatrix, resampling: Resampling, alpha: float = 0.05) -> PowerReport:
    check_alpha(alpha)
    check_separable(matrix)
    groups = matrix.unit_groups(resampling.unit)
    units = Units.of(matrix.scores, groups)
    if units.n < 2:
        raise DataError(
            f"{matrix.task}: all {len(matrix.queries)} queries are one {resampling.unit}; the tests "
            f"need at least two units (try --unit query)"
        )
    asl, exact = pair_asl(units, resampling)
    means = matrix.means
    pairs = [
        PairASL(matrix.systems[i], matrix.systems[j], float(means[i]), float(means[j]), float(means[i] - means[j]), p)
        for (i, j), p in asl.items()
    ]
    significant = sum(pair.p < alpha for pair in pairs)
    return PowerReport(
        task=matrix.task,
        measure=matrix.measure,
        test=resampling.test,
        unit=resampling.unit,
        samples=resampling.samples,
        seed=resampling.seed,
        alpha=alpha,
        exact=exact,
        systems=list(matrix.systems),
        queries=len(matrix.queries),
        units=units.n,
        pairs=pairs,
        significant_pairs=significant,
        discriminative_power=significant / len(pairs),
        filled_with_zero=dict(matrix.filled),
    )
