"""`mtrbench pool`'s input check and tables: the refined qrels must extend the original ones; pool growth by
pool size and each run's leave-one-out marginal contribution."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mtrbench.infra.errors import DataError

if TYPE_CHECKING:
    from rich.table import Table

    from mtrbench.analyses.pool import PoolAnalysis


def check_refined_keeps_original(
    original: dict[str, dict[str, int]], refined: dict[str, dict[str, int]], original_path: str, refined_path: str
) -> None:
    """pool reads the refined qrels as the original ones plus newly judged documents (DREAM's D_S: O plus the refined
    labels of what S pooled). A file that drops original judgments (another judgment set, a subset of the queries)
    would give growth rates that describe neither, with nothing shown: refused, not warned about."""
    dropped = [(q, d) for q, docs in original.items() for d in docs if d not in refined.get(q, {})]
    if dropped:
        query, doc = dropped[0]
        raise DataError(
            f"{refined_path}: the refined qrels drop {len(dropped)} judgment(s) of {original_path} (first: query "
            f"{query}, document {doc}); refined qrels must keep every original judgment and add the new ones"
        )


def growth_table(result: PoolAnalysis, runs: int, metric: str, k: int) -> Table:
    """Holes found, growth rate and marginal contribution for each pool size 1..runs."""
    from mtrbench.results.table import compact_table  # deferred: loads pytrec_eval

    table = compact_table()
    for column in ("pool size m", "holes found", "growth rate GR(m)", f"MC(m) {metric}@{k}"):
        table.add_column(column, justify="right")
    for m in range(1, runs + 1):
        gr = result.growth_rate[m - 1]
        mc = result.marginal_contribution_by_size[m - 1] if m - 1 < len(result.marginal_contribution_by_size) else None
        table.add_row(
            str(m),
            f"{result.holes_per_size[m - 1]:.1f}",
            "-" if gr is None else f"{gr:.4f}",
            "-" if mc is None else f"{mc:.4f}",
        )
    return table


def contribution_table(result: PoolAnalysis, metric: str, k: int) -> Table:
    """Each run's leave-one-out marginal contribution."""
    from mtrbench.results.table import compact_table  # deferred: loads pytrec_eval

    table = compact_table()
    table.add_column("run")
    table.add_column(f"MC {metric}@{k}", justify="right")
    for name, value in result.marginal_contribution.items():
        table.add_row(name, f"{value:.4f}")
    return table


__all__ = ["check_refined_keeps_original", "contribution_table", "growth_table"]
