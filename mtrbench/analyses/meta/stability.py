"""Do two conditions rank the systems alike? And how often does a smaller topic set swap a pair?

* Kendall's tau-b between the systems' means under two conditions (scipy ``kendalltau``), and
  tau_AP (Yilmaz, Aslam and Robertson, SIGIR 2008), which weighs a swap near the top more than one near
  the bottom: for the ranking under condition B, top first, C(i) counts the systems above rank i that
  condition A (the reference) also puts above the system at rank i, and
  tau_AP = 2 / (N - 1) * sum_{i=2..N} C(i) / (i - 1) - 1. Ties under B are broken by system name; a pair
  tied under A is not counted as correctly ordered.
* The swap method (Voorhees and Buckley, SIGIR 2002; Sakai, IPM 2007): draw two disjoint sets of
  ``subset_size`` units, take every pair's difference d on each, bin the pairs by |d| on the first set
  and count a swap when the two sets disagree on the sign. The minimum detectable difference (MDD) is the
  upper edge of the largest-difference bin whose swap rate exceeds ``max_swap_rate``: every larger observed
  difference swapped within it (0 when no bin exceeds it; None when even the largest bin does).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from mtrbench.analyses.meta.inputs import ScoreMatrix
from mtrbench.analyses.meta.tests import Resampling, Units
from mtrbench.infra.errors import DataError, UserInputError

MAX_SWAP_RATE = 0.05
BIN_WIDTH = 0.01


@dataclass(frozen=True)
class SwappedPair:
    a: str
    b: str
    diff_first: float  # mean_a - mean_b under condition A
    diff_second: float  # the same under condition B


@dataclass(frozen=True)
class RankAgreement:
    first: str  # what condition A is (a qrels file, a measure ...)
    second: str
    systems: list[str]
    means_first: list[float]
    means_second: list[float]
    kendall_tau: float  # tau-b
    kendall_p: float
    tau_ap: float
    swapped: list[SwappedPair]

    def as_dict(self) -> dict:
        return asdict(self)


def tau_ap(reference: np.ndarray, ranked: np.ndarray, names: list[str]) -> float:
    """tau_AP of the ranking by ``ranked`` (descending) against ``reference`` as the truth."""
    n = len(names)
    if n < 2:
        raise UserInputError("tau_AP needs at least two systems")
    order = sorted(range(n), key=lambda i: (-ranked[i], names[i]))
    total = 0.0
    for position in range(1, n):
        item = order[position]
        correct = sum(reference[above] > reference[item] for above in order[:position])
        total += correct / position
    return 2.0 / (n - 1) * total - 1.0


def rank_agreement(first: ScoreMatrix, second: ScoreMatrix, first_label: str, second_label: str) -> RankAgreement:
    """Systems are paired in the order given; the two matrices may have different queries."""
    from scipy import stats

    if len(first.systems) != len(second.systems):
        raise UserInputError(
            f"the two conditions have {len(first.systems)} and {len(second.systems)} systems; "
            f"give the same systems in the same order"
        )
    if len(first.systems) < 3:
        raise UserInputError(f"ranking agreement needs at least three systems, got {len(first.systems)}")
    x, y = first.means, second.means
    for label, values in ((first_label, x), (second_label, y)):
        if np.all(values == values[0]):
            raise DataError(f"{label}: every system has the same mean; a ranking correlation is undefined")
    result = stats.kendalltau(x, y)
    swapped = [
        SwappedPair(first.systems[i], first.systems[j], float(x[i] - x[j]), float(y[i] - y[j]))
        for i in range(len(x))
        for j in range(i + 1, len(x))
        if (x[i] - x[j]) * (y[i] - y[j]) < 0
    ]
    return RankAgreement(
        first=first_label,
        second=second_label,
        systems=list(first.systems),
        means_first=[float(v) for v in x],
        means_second=[float(v) for v in y],
        kendall_tau=float(result.statistic),
        kendall_p=float(result.pvalue),
        tau_ap=tau_ap(x, y, list(first.systems)),
        swapped=swapped,
    )


@dataclass(frozen=True)
class SwapBin:
    low: float
    high: float
    pairs: int  # pair observations whose |d| on the first set falls in [low, high)
    swaps: int

    @property
    def rate(self) -> float:
        return self.swaps / self.pairs if self.pairs else 0.0


@dataclass(frozen=True)
class SwapReport:
    measure: str
    unit: str
    samples: int
    seed: int
    subset_size: int
    units: int
    bin_width: float
    max_swap_rate: float
    swap_rate: float  # over every pair observation of every trial
    mdd: float | None  # None: even the bin of the largest differences swaps more than max_swap_rate
    bins: list[SwapBin]

    def as_dict(self) -> dict:
        data = asdict(self)
        data["bins"] = [{**asdict(b), "swap_rate": b.rate} for b in self.bins]
        return data


def swap_method(
    matrix: ScoreMatrix,
    resampling: Resampling,
    subset_size: int | None = None,
    bin_width: float = BIN_WIDTH,
    max_swap_rate: float = MAX_SWAP_RATE,
) -> SwapReport:
    units = Units.of(matrix.scores, matrix.unit_groups(resampling.unit))
    size = units.n // 2 if subset_size is None else subset_size
    if size < 1 or 2 * size > units.n:
        raise UserInputError(
            f"the swap method draws two disjoint sets of --subset-size {resampling.unit}s: "
            f"between 1 and {units.n // 2} here, got {size}"
        )
    if bin_width <= 0:
        raise UserInputError(f"--bin-width must be positive, got {bin_width}")
    m = units.sums.shape[0]
    upper = np.triu_indices(m, 1)
    rng = np.random.default_rng(resampling.seed)
    bin_pairs: dict[int, int] = {}
    bin_swaps: dict[int, int] = {}
    for _ in range(resampling.samples):
        order = rng.permutation(units.n)
        diffs = []
        for chosen in (order[:size], order[size : 2 * size]):
            means = units.sums[:, chosen].sum(axis=1) / units.counts[chosen].sum()
            diffs.append((means[:, None] - means[None, :])[upper])
        first, second = diffs
        bins = np.floor(np.abs(first) / bin_width + 1e-9).astype(int)
        swaps = first * second < 0
        for index, swapped in zip(bins.tolist(), swaps.tolist()):
            bin_pairs[index] = bin_pairs.get(index, 0) + 1
            bin_swaps[index] = bin_swaps.get(index, 0) + int(swapped)
    bins = [
        SwapBin(round(i * bin_width, 10), round((i + 1) * bin_width, 10), bin_pairs[i], bin_swaps[i])
        for i in sorted(bin_pairs)
    ]
    above = [b for b in bins if b.rate > max_swap_rate]
    if not above:
        mdd: float | None = 0.0
    elif above[-1] is bins[-1]:
        mdd = None  # even the largest differences observed swap too often
    else:
        mdd = above[-1].high
    total = sum(b.pairs for b in bins)
    return SwapReport(
        measure=matrix.measure,
        unit=resampling.unit,
        samples=resampling.samples,
        seed=resampling.seed,
        subset_size=size,
        units=units.n,
        bin_width=bin_width,
        max_swap_rate=max_swap_rate,
        swap_rate=sum(b.swaps for b in bins) / total if total else 0.0,
        mdd=mdd,
        bins=bins,
    )
