"""Figures of the meta-analyses (matplotlib, no display): ASL curves, ranking agreement and swap rates,
power against topic-set size. PNG or SVG, by the file's extension."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mtrbench.analyses.meta.power import PowerReport
from mtrbench.analyses.meta.size import SizeReport, anova_power, t_power
from mtrbench.analyses.meta.stability import RankAgreement, SwapReport
from mtrbench.infra.atomic import atomic_write_bytes, ensure_parent
from mtrbench.infra.errors import UserInputError

FORMATS = {".png": "png", ".svg": "svg"}
DPI = 110


def check_plot_path(path: str | Path) -> Path:
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise UserInputError(f"--plot {path}: name a .png or .svg file")

    return ensure_parent(path)


def _figure(width: float, height: float, columns: int = 1):
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    return figure, figure.subplots(1, columns)


def _save(figure, path: Path) -> Path:
    buffer = io.BytesIO()
    figure.savefig(buffer, format=FORMATS[path.suffix.lower()])
    atomic_write_bytes(path, buffer.getvalue())
    return path


def curve_label(report: PowerReport, several_tasks: bool) -> str:
    from mtrbench.measures import label  # deferred: loads pytrec_eval

    task = f"{report.task} " if several_tasks else ""
    return (
        f"{task}{label(report.measure)}, {report.unit} "
        f"({report.significant_pairs}/{len(report.pairs)} < {report.alpha:g})"
    )


def plot_asl_curves(reports: Sequence[PowerReport], path: str | Path) -> Path:
    """One curve per report: pairs sorted by ASL on the x axis, as in Sakai (2006)."""
    path = check_plot_path(path)
    figure, axes = _figure(7.0, 4.2)
    several_tasks = len({r.task for r in reports}) > 1
    for report in reports:
        curve = report.asl_curve
        axes.plot(range(1, len(curve) + 1), curve, marker="o", markersize=3, label=curve_label(report, several_tasks))
    alpha = reports[0].alpha
    axes.axhline(alpha, color="grey", linestyle="--", linewidth=1)
    axes.text(1, alpha, f" alpha = {alpha:g}", va="bottom", color="grey", fontsize=8)
    axes.set_xlabel("system pairs, sorted by ASL")
    axes.set_ylabel(f"ASL ({reports[0].test} test)")
    axes.set_ylim(-0.02, 1.02)
    first = reports[0]
    drawn = f"{first.samples} resamples, seed {first.seed}" if first.test != "t" else "no resampling"
    axes.set_title(f"Discriminative power: {len(first.systems)} systems, {first.test} test ({drawn})", fontsize=10)
    from matplotlib.ticker import MaxNLocator

    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.legend(fontsize=8, loc="upper left")
    axes.grid(alpha=0.3)
    return _save(figure, path)


def plot_stability(agreement: RankAgreement, swaps: SwapReport, path: str | Path) -> Path:
    """Left: each system's mean under the two conditions. Right: swap rate by difference, with the MDD."""
    path = check_plot_path(path)
    figure, (left, right) = _figure(10.0, 4.2, columns=2)
    x, y = np.array(agreement.means_first), np.array(agreement.means_second)
    left.scatter(x, y, s=18)
    for name, a, b in zip(agreement.systems, x, y):
        left.annotate(name, (a, b), fontsize=7, xytext=(3, 3), textcoords="offset points")
    low, high = min(x.min(), y.min()), max(x.max(), y.max())
    left.plot([low, high], [low, high], color="grey", linewidth=1, linestyle=":")
    left.set_xlabel(f"mean: {agreement.first}")
    left.set_ylabel(f"mean: {agreement.second}")
    left.set_title(
        f"tau-b = {agreement.kendall_tau:.3f}, tau_AP = {agreement.tau_ap:.3f}, {len(agreement.swapped)} swapped",
        fontsize=10,
    )
    left.grid(alpha=0.3)
    centers = [(b.low + b.high) / 2 for b in swaps.bins]
    right.bar(centers, [b.rate for b in swaps.bins], width=swaps.bin_width * 0.9)
    right.axhline(swaps.max_swap_rate, color="grey", linestyle="--", linewidth=1)
    if swaps.mdd is not None:
        right.axvline(swaps.mdd, color="red", linewidth=1)
        right.text(
            swaps.mdd, max(b.rate for b in swaps.bins) or 0.05, f" MDD {swaps.mdd:g}", color="red", fontsize=8, va="top"
        )
    right.set_xlabel(f"|difference| on one set of {swaps.subset_size} {swaps.unit}s")
    right.set_ylabel("swap rate")
    right.set_title(f"swap method: {swaps.samples} trials, swap rate {swaps.swap_rate:.3f}", fontsize=10)
    right.grid(alpha=0.3)
    return _save(figure, path)


def plot_size(report: SizeReport, path: str | Path) -> Path:
    """Power against the number of units for the paired t-test and the one-way ANOVA."""
    path = check_plot_path(path)
    figure, axes = _figure(7.0, 4.2)
    largest = max(report.paired_t.required, report.anova.required, report.current_size) * 1.3
    sizes = np.unique(np.linspace(2, max(largest, 10), 200).astype(int))
    standardized = report.delta / np.sqrt(2 * report.residual_variance)
    effect = report.delta**2 / (2 * report.residual_variance)
    axes.plot(sizes, [t_power(int(n), report.alpha, standardized) for n in sizes], label="paired t-test")
    axes.plot(
        sizes,
        [anova_power(int(n), report.systems, report.alpha, effect) for n in sizes],
        label=f"one-way ANOVA, {report.systems} systems",
    )
    axes.axhline(report.power, color="grey", linestyle="--", linewidth=1)
    axes.axvline(report.current_size, color="black", linewidth=1)
    axes.text(report.current_size, 0.02, f" now: {report.current_size}", fontsize=8)
    for design, color in ((report.paired_t, "C0"), (report.anova, "C1")):
        axes.axvline(design.required, color=color, linestyle=":", linewidth=1)
        axes.text(design.required, report.power, f" {design.required}", color=color, fontsize=8, va="bottom")
    axes.set_xlabel(f"{report.unit}s")
    axes.set_ylabel("power")
    axes.set_ylim(0, 1.02)
    from mtrbench.measures import label  # deferred: loads pytrec_eval

    axes.set_title(
        f"Topic-set size: detect {report.delta:g} in {label(report.measure)} at alpha {report.alpha:g}", fontsize=10
    )
    axes.legend(fontsize=8, loc="lower right")
    axes.grid(alpha=0.3)
    return _save(figure, path)
