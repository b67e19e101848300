"""Topic-set size design (Sakai, Information Retrieval Journal 2016): how many units (conversations) a
benchmark needs so that a difference of ``delta`` is detected with probability ``power`` at ``alpha``.

The score variance comes from the benchmark itself: a two-way ANOVA without replication of the
systems x units matrix (each unit's score is the mean of its queries) leaves the residual variance
V_E = SS_E / ((m - 1)(n - 1)), taken as the variance sigma^2 of one system's score on a unit.

* Paired t-test: the difference of two systems has variance sigma_d^2 = 2 sigma^2; with the standardized
  difference D = delta / sigma_d, Sakai's closed-form start is
  n0 = ((z_{alpha/2} + z_beta) / D)^2 + z_{alpha/2}^2 / 2,
  and the size is the smallest n whose power under the noncentral t (df n - 1, noncentrality D sqrt(n))
  reaches ``power``.
* One-way ANOVA over m systems, ``delta`` the minimum detectable range (best - worst): Delta =
  delta^2 / (2 sigma^2), noncentrality lambda = n Delta; the closed-form start takes lambda from the
  noncentral chi-square with m - 1 degrees of freedom (the large-n limit), and the size is the smallest n
  whose power under the noncentral F (m - 1, m (n - 1), lambda) reaches ``power``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from mtrbench.analyses.meta.inputs import ScoreMatrix
from mtrbench.analyses.meta.power import check_alpha, check_separable
from mtrbench.analyses.meta.tests import Units
from mtrbench.infra.errors import DataError, UserInputError

MAX_SIZE = 1_000_000


@dataclass(frozen=True)
class SizeDesign:
    closed_form: int  # Sakai's approximation, rounded up
    required: int  # smallest size reaching the power, by the noncentral distribution
    power_now: float  # power at the benchmark's current size


@dataclass(frozen=True)
class SizeReport:
    task: str
    measure: str
    unit: str
    alpha: float
    power: float
    delta: float
    systems: int
    current_size: int  # units in the benchmark now
    residual_variance: float  # V_E of the two-way ANOVA without replication
    paired_t: SizeDesign
    anova: SizeDesign

    def as_dict(self) -> dict:
        return asdict(self)


def residual_variance(unit_scores: np.ndarray) -> float:
    """V_E of a two-way ANOVA without replication (rows: systems, columns: units)."""
    m, n = unit_scores.shape
    residual = (
        unit_scores
        - unit_scores.mean(axis=1, keepdims=True)
        - unit_scores.mean(axis=0, keepdims=True)
        + unit_scores.mean()
    )
    return float((residual**2).sum() / ((m - 1) * (n - 1)))


def t_closed_form(alpha: float, power: float, standardized: float) -> float:
    from scipy import stats

    z_alpha, z_beta = stats.norm.ppf(1 - alpha / 2), stats.norm.ppf(power)
    return ((z_alpha + z_beta) / standardized) ** 2 + z_alpha**2 / 2


def t_power(n: int, alpha: float, standardized: float) -> float:
    from scipy import stats

    df = n - 1
    critical = stats.t.ppf(1 - alpha / 2, df)
    shift = standardized * math.sqrt(n)
    return float(stats.nct.sf(critical, df, shift) + stats.nct.cdf(-critical, df, shift))


def anova_power(n: int, m: int, alpha: float, effect: float) -> float:
    from scipy import stats

    df_between, df_within = m - 1, m * (n - 1)
    critical = stats.f.ppf(1 - alpha, df_between, df_within)
    return float(stats.ncf.sf(critical, df_between, df_within, n * effect))


def anova_closed_form(m: int, alpha: float, power: float, effect: float) -> float:
    from scipy import optimize, stats

    critical = stats.chi2.ppf(1 - alpha, m - 1)
    noncentrality = optimize.brentq(lambda lam: stats.ncx2.sf(critical, m - 1, lam) - power, 1e-9, 1e6)
    return noncentrality / effect


def _smallest(power_at, start: int, target: float) -> int:
    """The smallest n >= 2 with power_at(n) >= target; power grows with n, so search up then bisect."""
    low, high = 1, max(2, start)
    while power_at(high) < target:
        low, high = high, high * 2
        if high > MAX_SIZE:
            raise DataError(f"more than {MAX_SIZE} units would be needed: is --delta far too small?")
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if power_at(middle) >= target else (middle, high)
    return high


def topic_set_size(matrix: ScoreMatrix, unit: str, delta: float, alpha: float = 0.05, power: float = 0.8) -> SizeReport:
    check_alpha(alpha)
    if not 0 < power < 1:
        raise UserInputError(f"--power must lie strictly between 0 and 1, got {power}")
    if delta <= 0:
        raise UserInputError(f"--delta must be positive, got {delta}")
    check_separable(matrix)
    units = Units.of(matrix.scores, matrix.unit_groups(unit))
    if units.n < 2:
        raise DataError(f"{matrix.task}: one {unit} only; the variance needs at least two")
    unit_scores = units.sums / units.counts
    variance = residual_variance(unit_scores)
    if variance <= 0:
        raise DataError(
            f"{matrix.task} {matrix.measure}: no residual variance (the systems differ by a constant "
            f"on every {unit}); any size detects their differences"
        )
    m, n = unit_scores.shape
    standardized = delta / math.sqrt(2 * variance)
    t_start = t_closed_form(alpha, power, standardized)
    t_design = SizeDesign(
        closed_form=math.ceil(t_start),
        required=_smallest(lambda k: t_power(k, alpha, standardized), math.ceil(t_start), power),
        power_now=t_power(n, alpha, standardized),
    )
    effect = delta**2 / (2 * variance)
    a_start = anova_closed_form(m, alpha, power, effect)
    a_design = SizeDesign(
        closed_form=math.ceil(a_start),
        required=_smallest(lambda k: anova_power(k, m, alpha, effect), math.ceil(a_start), power),
        power_now=anova_power(n, m, alpha, effect),
    )
    return SizeReport(
        task=matrix.task,
        measure=matrix.measure,
        unit=unit,
        alpha=alpha,
        power=power,
        delta=delta,
        systems=m,
        current_size=n,
        residual_variance=variance,
        paired_t=t_design,
        anova=a_design,
    )
