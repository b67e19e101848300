"""Many systems x chosen measures in one table, with paired significance tests (ranx's ``compare`` report, as a
paper table).

Each system gets a letter (a, b, c, ...). A cell lists the letters of the systems it is significantly better than
on that measure: against the baseline only, or for every pair. The p-values of one measure form one family and
are Holm-adjusted together (``multiple.holm``, equal to statsmodels' ``multipletests(method="holm")``).

The paired unit is the query, or the conversation (each system's mean over the conversation's turns), since the
turns of one conversation are not independent samples. Only units every system has are compared.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from string import ascii_lowercase

import numpy as np

from mtrbench.analyses.multiple import holm
from mtrbench.analyses.significance import randomization_test
from mtrbench.infra.errors import UserInputError

TESTS = ("t", "randomization")
UNITS = ("query", "conversation")


@dataclass(frozen=True)
class SystemScores:
    """One system's per-query values and, where known, each query's conversation."""

    name: str
    per_query: Mapping[str, Mapping[str, float]]  # qid -> metric key -> value
    conversations: Mapping[str, str] = field(default_factory=dict)  # qid -> conversation id


@dataclass(frozen=True)
class CompareOptions:
    measures: tuple[str, ...]  # metric keys, in column order
    baseline: int | None = 0  # index of the baseline system; None: every pair
    test: str = "t"  # paired t-test or two-sided randomization (sign-flip) test
    unit: str = "query"
    alpha: float = 0.05  # on the Holm-adjusted p-values
    n_resamples: int = 10_000  # randomization test only
    seed: int = 0


@dataclass(frozen=True)
class PairTest:
    measure: str
    a: int  # system indices
    b: int
    diff: float  # mean over units of b - a
    p_value: float | None  # None: every unit's difference is the same, so no test
    p_holm: float | None


@dataclass
class ComparisonTable:
    systems: list[str]
    measures: list[str]
    means: dict[tuple[int, str], float]  # (system, measure) -> mean over the compared queries
    tests: list[PairTest]
    options: CompareOptions
    n_queries: int
    n_units: int
    left_out: int  # queries not scored by every system

    @property
    def letters(self) -> list[str]:
        return [ascii_lowercase[i] for i in range(len(self.systems))]

    def beats(self, system: int, measure: str) -> list[int]:
        """Systems that ``system`` is significantly better than on ``measure`` (Holm-adjusted p < alpha)."""
        out = []
        for t in self.tests:
            if t.measure != measure or t.p_holm is None or t.p_holm >= self.options.alpha:
                continue
            if t.a == system and t.diff < 0:
                out.append(t.b)
            elif t.b == system and t.diff > 0:
                out.append(t.a)
        return sorted(out)

    def best(self, measure: str) -> set[int]:
        """The systems with the highest mean on ``measure`` (all of them on a tie)."""
        top = max(self.means[(i, measure)] for i in range(len(self.systems)))
        return {i for i in range(len(self.systems)) if self.means[(i, measure)] == top}


def compare_systems(systems: Sequence[SystemScores], options: CompareOptions) -> ComparisonTable:
    _check(systems, options)
    common, units = compared_units(systems, options)
    every = set.union(*(set(s.per_query) for s in systems))
    means = {
        (i, m): float(np.mean([s.per_query[q][m] for q in common]))
        for i, s in enumerate(systems)
        for m in options.measures
    }
    pairs = (
        [(options.baseline, j) for j in range(len(systems)) if j != options.baseline]
        if options.baseline is not None
        else [(i, j) for i in range(len(systems)) for j in range(i + 1, len(systems))]
    )
    return ComparisonTable(
        [s.name for s in systems],
        list(options.measures),
        means,
        paired_tests(systems, units, pairs, options),
        options,
        n_queries=len(common),
        n_units=len(units),
        left_out=len(every) - len(common),
    )


def compared_units(systems: Sequence[SystemScores], options: CompareOptions) -> tuple[list[str], dict[str, list[str]]]:
    """(the queries every system has, unit id -> the queries it averages); an error when they share none or a
    system lacks a measure's value on one of them."""
    common = sorted(set.intersection(*(set(s.per_query) for s in systems)))
    if not common:
        raise UserInputError("the systems share no evaluated query: are they of the same task and split?")
    for s in systems:
        absent = [m for m in options.measures if any(m not in s.per_query[q] for q in common)]
        if absent:
            raise UserInputError(
                f"{s.name} lacks per-query values of {', '.join(absent)}; it has: {', '.join(s.per_query[common[0]])}"
            )
    return common, _units(systems, common, options.unit)


def paired_tests(
    systems: Sequence[SystemScores],
    units: dict[str, list[str]],
    pairs: Sequence[tuple[int, int]],
    options: CompareOptions,
) -> list[PairTest]:
    """The paired test of each pair (a, b) of system indices on each measure; one measure's pairs are one Holm
    family."""
    tests: list[PairTest] = []
    for measure in options.measures:
        values = [_unit_values(s, units, measure) for s in systems]
        raw = [(a, b, float(np.mean(values[b] - values[a])), _p_value(values[a], values[b], options)) for a, b in pairs]
        for (a, b, diff, p), adjusted in zip(raw, holm([p for *_, p in raw])):
            tests.append(PairTest(measure, a, b, diff, p, adjusted))
    return tests


def _check(systems: Sequence[SystemScores], options: CompareOptions) -> None:
    if len(systems) < 2:
        raise UserInputError("compare needs at least two systems")
    if len(systems) > len(ascii_lowercase):
        raise UserInputError(f"compare labels systems a-z: at most {len(ascii_lowercase)} systems")
    names = [s.name for s in systems]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise UserInputError(f"two systems are named {', '.join(twice)}: tell them apart with --names")
    if options.test not in TESTS:
        raise UserInputError(f"--test must be one of {', '.join(TESTS)}, got '{options.test}'")
    if options.unit not in UNITS:
        raise UserInputError(f"--unit must be one of {', '.join(UNITS)}, got '{options.unit}'")
    if options.baseline is not None and not 0 <= options.baseline < len(systems):
        raise UserInputError(f"the baseline must be one of the {len(systems)} systems")
    if not 0 < options.alpha < 1:
        raise UserInputError(f"--alpha must be between 0 and 1, got {options.alpha:g}")
    if not options.measures:
        raise UserInputError("no measure to compare")


def _units(systems: Sequence[SystemScores], common: list[str], unit: str) -> dict[str, list[str]]:
    """unit id -> the common queries it averages (a query is its own unit)."""
    if unit == "query":
        return {q: [q] for q in common}
    conversation: dict[str, str] = {}
    for s in systems:
        for q in common:
            c = s.conversations.get(q)
            if c is None:
                continue
            if conversation.setdefault(q, c) != c:
                raise UserInputError(
                    f"query {q} belongs to conversation {conversation[q]} in one system and {c} in "
                    f"{s.name}: are they of the same task?"
                )
    unknown = [q for q in common if q not in conversation]
    if unknown:
        raise UserInputError(
            f"--unit conversation needs each query's conversation: {len(unknown)} of the "
            f"{len(common)} compared queries have none (eval result files record it; for TREC runs "
            f"give --task)"
        )
    grouped: dict[str, list[str]] = defaultdict(list)
    for q in common:
        grouped[conversation[q]].append(q)
    if len(grouped) < 2:
        raise UserInputError("--unit conversation: the compared queries come from fewer than two conversations")
    return dict(grouped)


def _unit_values(system: SystemScores, units: dict[str, list[str]], measure: str) -> np.ndarray:
    return np.array([np.mean([system.per_query[q][measure] for q in queries]) for queries in units.values()])


def _p_value(a: np.ndarray, b: np.ndarray, options: CompareOptions) -> float | None:
    d = b - a
    if len(d) < 2 or np.all(d == d[0]):
        return None  # no variation in the differences: a t statistic is undefined, a sign flip changes nothing
    if options.test == "t":
        from scipy import stats

        return float(stats.ttest_rel(b, a).pvalue)

    return randomization_test(b, a, n_resamples=options.n_resamples, seed=options.seed)
