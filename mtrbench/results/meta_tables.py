"""`mtrbench meta power` and `meta stability` as the terminal shows them: the summary and per-pair tables of
discriminative power, and the rank agreement of two conditions with the swap method's result."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from mtrbench.analyses.meta.power import PowerReport
    from mtrbench.analyses.meta.stability import RankAgreement, SwapReport


def p_text(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def print_power(console: Console, reports: list[PowerReport]) -> None:
    """The discriminative power of each (task, measure), then each one's pairs by ASL."""
    from mtrbench.measures import label  # deferred: loads pytrec_eval
    from mtrbench.results.table import compact_table, print_titled  # deferred: loads pytrec_eval

    tasks = sorted({r.task for r in reports})
    summary = compact_table()
    columns = (["task"] if len(tasks) > 1 else []) + [
        "measure",
        "unit",
        "units",
        "pairs",
        f"ASL<{reports[0].alpha:g}",
        "power",
    ]
    for column in columns:
        summary.add_column(column, justify="left" if column in ("task", "measure", "unit") else "right", no_wrap=True)
    for r in reports:
        summary.add_row(
            *([r.task[:24]] if len(tasks) > 1 else []),
            label(r.measure),
            r.unit,
            str(r.units),
            str(len(r.pairs)),
            str(r.significant_pairs),
            f"{r.discriminative_power:.3f}",
        )
    first = reports[0]
    randomized = f"{first.samples} resamples, seed {first.seed}" if first.test != "t" else "no resampling"
    where = "" if len(tasks) > 1 else f"{tasks[0]}: "
    print_titled(
        console, f"{where}discriminative power, {first.test} test ({randomized}), {len(first.systems)} systems", summary
    )
    for r in reports:
        table = compact_table()
        for column in ("A", "B", "A - B", "ASL"):
            table.add_column(column, justify="left" if column in ("A", "B") else "right", overflow="fold")
        for pair in sorted(r.pairs, key=lambda x: x.p):
            table.add_row(pair.a, pair.b, f"{pair.diff:+.4f}", p_text(pair.p))  # long names wrap, whole
        print_titled(console, f"{r.task} {label(r.measure)}, {r.test} test by {r.unit}", table)


def ranks(values: list[float]) -> dict[int, int]:
    """System index -> its rank from 1, best mean first."""
    return {i: rank for rank, i in enumerate(sorted(range(len(values)), key=lambda i: -values[i]), 1)}


def print_stability(console: Console, agreement: RankAgreement, swaps: SwapReport) -> None:
    """Both conditions' means and ranks, the rank correlations, the swapped pairs and the swap method's line."""
    from mtrbench.results.table import compact_table, print_titled  # deferred: loads pytrec_eval

    table = compact_table()
    for column in ("system", "A", "B", "rank A", "rank B"):
        table.add_column(column, justify="left" if column == "system" else "right", overflow="fold")
    rank_a, rank_b = ranks(agreement.means_first), ranks(agreement.means_second)
    for i, name in enumerate(agreement.systems):
        table.add_row(
            name,
            f"{agreement.means_first[i]:.4f}",
            f"{agreement.means_second[i]:.4f}",
            str(rank_a[i]),
            str(rank_b[i]),
        )
    print_titled(
        console,
        f"A = {agreement.first}; B = {agreement.second}: Kendall tau-b {agreement.kendall_tau:.3f} "
        f"(p {agreement.kendall_p:.3g}), tau_AP {agreement.tau_ap:.3f}, "
        f"{len(agreement.swapped)} swapped pair(s)",
        table,
    )
    for pair in agreement.swapped:
        console.print(
            f"  swapped: {pair.a} vs {pair.b}: {pair.diff_first:+.4f} under A, {pair.diff_second:+.4f} under B"
        )
    mdd = "none within the observed differences" if swaps.mdd is None else f"{swaps.mdd:g}"
    console.print(
        f"swap method on A ({swaps.samples} trials of two disjoint sets of {swaps.subset_size} "
        f"{swaps.unit}s): swap rate {swaps.swap_rate:.3f}; minimum detectable difference at "
        f"{swaps.max_swap_rate:.0%} swaps: {mdd}"
    )


__all__ = ["p_text", "print_power", "print_stability", "ranks"]
