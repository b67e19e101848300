"""Two results compared query by query (``mtrbench compare A.json B.json``): each metric's paired comparison,
Holm-adjusted p-values per test, the two terminal tables and the ``--output`` JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mtrbench.analyses.multiple import holm
from mtrbench.infra.errors import MtrbenchError

if TYPE_CHECKING:
    from rich.table import Table

    from mtrbench.analyses.significance import PairedComparison

PerQuery = dict[str, dict[str, float]]  # query id -> metric key -> value


def compared_metrics(a: PerQuery, b: PerQuery, wanted: list[str]) -> list[str]:
    """``wanted``, each checked to be in both per-query files; else (empty) every metric both have, in A's order."""
    keys = [k for k in next(iter(a.values())) if k in next(iter(b.values()))]
    if not wanted:
        return keys
    missing = [m for m in wanted if m not in keys]
    if missing:
        raise MtrbenchError(f"metric(s) {missing} not in both per-query files; available: {', '.join(keys)}")
    return wanted


def paired_queries(a: PerQuery, b: PerQuery) -> tuple[list[str], int]:
    """The queries both results evaluated (sorted) and how many only one of them has."""
    common = sorted(set(a) & set(b))
    if not common:
        raise MtrbenchError("the two results share no evaluated query: are they the same task and split?")
    return common, len(set(a) ^ set(b))


@dataclass(frozen=True)
class PairedReport:
    """Each metric's paired comparison of B against A, with the Holm-adjusted p-values of each test: each test
    is its own family, adjusted over the t-test p-values of every metric shown, and over the randomization ones."""

    rows: list[PairedComparison]
    t_holm: list[float | None]
    randomization_holm: list[float | None]

    def differences_table(self) -> Table:
        """Means of A and B, their difference with its CI, the effect size and the per-query win/tie/loss."""
        from mtrbench.measures import label as pretty_name  # deferred: loads pytrec_eval
        from mtrbench.results.table import compact_table  # deferred: loads pytrec_eval

        table = compact_table()
        for column in ("metric", "A", "B", "B-A", "CI95(B-A)", "d", "B win/tie/loss"):
            table.add_column(column, justify="right", no_wrap=True)
        for r in self.rows:
            table.add_row(
                pretty_name(r.metric),
                f"{r.mean_a:.4f}",
                f"{r.mean_b:.4f}",
                f"{r.diff:+.4f}",
                f"{r.diff_ci95[0]:+.3f},{r.diff_ci95[1]:+.3f}",
                "-" if r.effect_size is None else f"{r.effect_size:+.2f}",
                f"{r.wins}/{r.ties}/{r.losses}",
            )
        return table

    def p_values_table(self) -> Table:
        from mtrbench.measures import label as pretty_name  # deferred: loads pytrec_eval
        from mtrbench.results.table import compact_table  # deferred: loads pytrec_eval

        def p_text(p: float | None) -> str:
            return "-" if p is None else f"{p:.3g}"

        table = compact_table()
        for column in ("metric", "p(t)", "p(t) Holm", "p(rand)", "p(rand) Holm"):
            table.add_column(column, justify="right", no_wrap=True)
        for r, th, rh in zip(self.rows, self.t_holm, self.randomization_holm):
            table.add_row(
                pretty_name(r.metric), p_text(r.t_p_value), p_text(th), p_text(r.randomization_p_value), p_text(rh)
            )
        return table

    def comparisons(self) -> list[dict]:
        """The rows as JSON, each with its Holm-adjusted p-values."""
        return [
            {**r.as_dict(), "t_p_value_holm": th, "randomization_p_value_holm": rh}
            for r, th, rh in zip(self.rows, self.t_holm, self.randomization_holm)
        ]


def paired_report(a: PerQuery, b: PerQuery, common: list[str], keys: list[str], tie_epsilon: float) -> PairedReport:
    from mtrbench.analyses.significance import compare_paired  # deferred: loads numpy

    rows = [
        compare_paired(key, [a[q][key] for q in common], [b[q][key] for q in common], tie_epsilon=tie_epsilon)
        for key in keys
    ]
    return PairedReport(rows, holm([r.t_p_value for r in rows]), holm([r.randomization_p_value for r in rows]))


__all__ = ["PairedReport", "compared_metrics", "paired_queries", "paired_report"]
