"""Achieved significance levels (ASL) of every system pair under one paired test.

The unit (a query, or a whole conversation) is what the tests treat as independent: each works on the
per-unit sums of a system's scores, so with ``unit=query`` every test is its textbook form, and with
``unit=conversation`` all turns of a conversation move together (sign flipped together, resampled
together, permuted together). The mean is always the mean over queries, as ``eval`` reports it.

* ``t``: paired t-test. Its standard error is the cluster-robust one over units, with units - 1 degrees of
  freedom; with one query per unit that is exactly ``scipy.stats.ttest_rel``.
* ``randomization``: Fisher's sign-flip test (Smucker, Allan and Carterette 2007), scipy's
  ``permutation_test`` on the per-unit sums (``significance.randomization_test``); exact when 2^units fits
  in ``samples``.
* ``bootstrap``: Sakai's (SIGIR 2006) paired bootstrap of the studentized mean difference, the
  differences shifted to mean 0 and whole units drawn with replacement.
* ``tukey-hsd``: randomized Tukey HSD (Carterette 2012; Sakai 2014): the systems' scores are permuted
  within each unit and a pair's ASL is how often the range (best - worst mean) of a permuted matrix
  reaches the pair's observed difference, which controls the error over the whole family of pairs. Exact
  when every permutation fits in ``samples``.

A pair whose per-unit differences are all zero has ASL 1; the t-test and the bootstrap give ASL 0 to a
nonzero difference that is the same on every unit (zero variance), where their statistic is infinite.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from mtrbench.analyses.significance import randomization_test
from mtrbench.infra.errors import UserInputError

TESTS = ("t", "randomization", "bootstrap", "tukey-hsd")
UNITS = ("conversation", "query")
BATCH = 500  # resamples drawn at a time: memory stays batch x units, the random stream is the same


@dataclass(frozen=True)
class Resampling:
    """How a randomized procedure draws; recorded in every JSON output."""

    test: str = "t"
    unit: str = "conversation"
    samples: int = 1000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.test not in TESTS:
            raise UserInputError(f"--test must be one of {', '.join(TESTS)}, got '{self.test}'")
        if self.unit not in UNITS:
            raise UserInputError(f"--unit must be one of {', '.join(UNITS)}, got '{self.unit}'")
        if self.samples < 1:
            raise UserInputError(f"--samples must be at least 1, got {self.samples}")
        if self.seed < 0:
            raise UserInputError(f"--seed must be >= 0, got {self.seed}")


@dataclass(frozen=True)
class Units:
    """Per-unit sums of each system's scores: what every test reads."""

    sums: np.ndarray  # systems x units
    counts: np.ndarray  # queries per unit

    @classmethod
    def of(cls, scores: np.ndarray, groups: np.ndarray) -> Units:
        n_units = int(groups.max()) + 1
        sums = np.stack([np.bincount(groups, weights=row, minlength=n_units) for row in scores])
        return cls(sums, np.bincount(groups, minlength=n_units).astype(float))

    @property
    def n(self) -> int:
        return self.sums.shape[1]

    @property
    def means(self) -> np.ndarray:
        return self.sums.sum(axis=1) / self.counts.sum()


def studentized(diff_sums: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean difference over queries and its cluster-robust standard error, along the last axis (units)."""
    total = counts.sum(axis=-1)
    mean = diff_sums.sum(axis=-1) / total
    n_units = diff_sums.shape[-1]
    residual = diff_sums - counts * mean[..., None]
    se = np.sqrt(n_units / (n_units - 1) * (residual**2).sum(axis=-1)) / total
    return mean, se


def _t_ratio(mean: np.ndarray, se: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = mean / se
    # no spread: 0/0 is no difference, x/0 an infinite statistic
    return np.where(se > 0, ratio, np.where(mean == 0, 0.0, np.inf))


def t_test(units: Units, a: int, b: int) -> float:
    from scipy import stats

    diff = units.sums[a] - units.sums[b]
    mean, se = studentized(diff, units.counts)
    if se == 0:
        return 1.0 if mean == 0 else 0.0
    return float(2 * stats.t.sf(abs(mean / se), units.n - 1))


def randomization(units: Units, a: int, b: int, samples: int, seed: int) -> float:
    return randomization_test(units.sums[a], units.sums[b], n_resamples=samples, seed=seed)


def bootstrap(units: Units, a: int, b: int, samples: int, seed: int) -> float:
    diff = units.sums[a] - units.sums[b]
    mean, se = studentized(diff, units.counts)
    if se == 0:
        return 1.0 if mean == 0 else 0.0
    observed = abs(mean / se)
    shifted = diff - units.counts * mean  # per-unit sums of the differences shifted to mean 0
    rng = np.random.default_rng(seed)
    reached = 0
    for size in _batches(samples):
        picks = rng.integers(0, units.n, size=(size, units.n))
        stat = _t_ratio(*studentized(shifted[picks], units.counts[picks]))
        reached += int((np.abs(stat) >= observed * (1 - 1e-12)).sum())
    return reached / samples


def tukey_hsd(units: Units, samples: int, seed: int) -> tuple[np.ndarray, bool]:
    """ASL of every pair (systems x systems) and whether every permutation was enumerated."""
    m, n = units.sums.shape
    observed = np.abs(units.means[:, None] - units.means[None, :])
    total = units.counts.sum()
    per_unit = units.sums.T  # units x systems
    exact = math.factorial(m) ** n <= samples
    reached = np.zeros((m, m))
    drawn = 0
    for order in _all_orders(m, n) if exact else _random_orders(m, n, samples, seed):
        means = np.take_along_axis(per_unit[None, :, :], order, axis=2).sum(axis=1) / total  # batch x systems
        ranges = means.max(axis=1) - means.min(axis=1)
        reached += (ranges[:, None, None] >= observed[None] * (1 - 1e-12) - 1e-15).sum(axis=0)
        drawn += len(order)
    return reached / drawn, exact


def _random_orders(m: int, n: int, samples: int, seed: int) -> Iterator[np.ndarray]:
    rng = np.random.default_rng(seed)
    for size in _batches(samples):
        yield np.argsort(rng.random((size, n, m)), axis=2)


def _all_orders(m: int, n: int) -> Iterator[np.ndarray]:
    chosen = itertools.product(itertools.permutations(range(m)), repeat=n)
    while True:
        chunk = list(itertools.islice(chosen, BATCH))
        if not chunk:
            return
        yield np.array(chunk, dtype=int)


def _batches(samples: int) -> Iterator[int]:
    for start in range(0, samples, BATCH):
        yield min(BATCH, samples - start)


def pair_asl(units: Units, resampling: Resampling) -> tuple[dict[tuple[int, int], float], bool]:
    """(i, j) with i < j -> ASL, and whether the test was exact (enumerated, or not randomized at all)."""
    m = units.sums.shape[0]
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
    if resampling.test == "tukey-hsd":
        matrix, exact = tukey_hsd(units, resampling.samples, resampling.seed)
        return {(i, j): float(matrix[i, j]) for i, j in pairs}, exact
    if resampling.test == "t":
        return {(i, j): t_test(units, i, j) for i, j in pairs}, True
    if resampling.test == "randomization":
        exact = 2**units.n <= resampling.samples
        return {(i, j): randomization(units, i, j, resampling.samples, resampling.seed) for i, j in pairs}, exact
    return {(i, j): bootstrap(units, i, j, resampling.samples, resampling.seed) for i, j in pairs}, False
