"""PNG bar charts of a leaderboard: one figure per table of the page (pivot.py), named after it.

A figure has a panel per column of the table (task or history strategy; the main score for a single-task
table) and the mean where the table has one; systems keep the table's rank order in every panel. Each bar
carries its value; a run whose result files were given gets its 95% interval: the percentile bootstrap of
the mean over conversations resampled with replacement (2,000 resamples, seeded; queries of one
conversation are not independent), as for the per-turn bands. Reported numbers have no per-query scores,
so no interval. The title is wrapped, never cut.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

from mtrbench.leaderboard.charts import colours
from mtrbench.leaderboard.html import column_title, pivot_title, provenance
from mtrbench.leaderboard.metric_names import metric_name
from mtrbench.leaderboard.pivot import METRICS, Pivot, pivots
from mtrbench.leaderboard.render import groups_of
from mtrbench.leaderboard.turns import Intervals
from mtrbench.results.plot import new_figure, save_png, unique_stem
from mtrbench.results.writer import safe_name

PANEL_WIDTH, LABEL_WIDTH, ROW_HEIGHT = 2.7, 2.8, 0.3  # inches
TITLE_CHARACTERS_PER_INCH = 15


def slug(text: str) -> str:
    """``MTR-SUITE, Table 3: 5 tasks`` -> ``mtr-suite-table-3-5-tasks``."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80] or "table"


def figure_names(document: dict[str, Any], tables: list[Pivot], by_id: dict[str, dict[str, Any]]) -> list[str]:
    """``NAME__what-the-table-is.png`` per table, unique."""
    used: set[str] = set()
    return [
        unique_stem(safe_name(f"{document['name']}__{slug(pivot_title(table, by_id))}"), used, "-") + ".png"
        for table in tables
    ]


def _panels(table: Pivot) -> list[tuple[str, int | None]]:
    """(panel title, column index; None for the mean)."""
    columns = range(1 if table.kind == METRICS else len(table.columns))
    panels: list[tuple[str, int | None]] = []
    for n in columns:
        text, tip = column_title(table, n)
        panels.append((tip if table.kind == METRICS else f"{text}\n{metric_name(table.columns[n].metric)}", n))
    if table.has_mean:
        panels.append((f"mean\n{metric_name(table.metrics[0])}", None))
    return panels


def _bar(value: float | None, interval: tuple[float, float] | None) -> tuple[float, float, float]:
    """(length, error below, error above); NaN errors draw nothing (no interval for that bar)."""
    if value is None or interval is None:
        return value or 0.0, float("nan"), float("nan")
    return value, max(0.0, value - interval[0]), max(0.0, interval[1] - value)


def _interval(table: Pivot, row, n: int | None, intervals: Intervals) -> tuple[float, float] | None:
    if n is None or not row.cells[n].entry_id:
        return None
    return intervals.get(row.cells[n].entry_id, {}).get(table.columns[n].metric)


def _draw(
    axis, labels: list[str], bars: list[tuple[float, float, float]], values: list[float | None], colours_: list[str]
) -> bool:
    """Horizontal bars best-ranked first, each with its value; True when some bar has an interval."""
    positions = list(range(len(bars)))
    low = [b[1] for b in bars]
    high = [b[2] for b in bars]
    has_interval = any(e == e for e in high)
    axis.barh(
        positions,
        [b[0] for b in bars],
        color=colours_,
        height=0.72,
        xerr=[low, high] if has_interval else None,
        error_kw={"elinewidth": 1, "capsize": 2},
    )
    reach = [b[0] + (b[2] if b[2] == b[2] else 0.0) for b in bars]
    top = max([1.0] + reach)
    for y, value, end in zip(positions, values, reach):
        if value is not None:
            axis.text(end + top * 0.01, y, f"{value:.3f}" if top <= 1 else f"{value:.2f}", va="center", fontsize=7)
    axis.set_xlim(0, top * 1.18)
    axis.set_yticks(positions)
    axis.set_yticklabels(["\n".join(textwrap.wrap(label, 34)) for label in labels], fontsize=8)
    axis.invert_yaxis()
    axis.grid(axis="x", alpha=0.3)
    return has_interval


def _single_system(table: Pivot, intervals: Intervals, panels, figure_for):
    """One system: one panel, a bar per column (e.g. per history strategy), so they read side by side."""
    row = table.rows[0]
    labels = [title.replace("\n", " \u00b7 ") for title, _ in panels]
    values = [row.mean if n is None else row.cells[n].value for _, n in panels]
    bars = [_bar(v, _interval(table, row, n, intervals)) for v, (_, n) in zip(values, panels)]
    figure = figure_for(LABEL_WIDTH + 2 * PANEL_WIDTH, ROW_HEIGHT * len(panels) + 2.0)
    axis = figure.subplots()
    has_interval = _draw(axis, labels, bars, values, colours(len(panels)))
    axis.set_title(row.label, fontsize=9)
    return figure, has_interval


def plot_table(
    document: dict[str, Any], table: Pivot, by_id: dict[str, dict[str, Any]], intervals: Intervals, path: Path
) -> Path:
    panels = _panels(table)
    if len(table.rows) == 1 and len(panels) > 1:
        figure, any_interval = _single_system(table, intervals, panels, new_figure)
        width = LABEL_WIDTH + 2 * PANEL_WIDTH
        return _finish(document, table, by_id, figure, width, any_interval, path)
    rows = table.rows
    width = LABEL_WIDTH + PANEL_WIDTH * len(panels)
    figure = new_figure(width, ROW_HEIGHT * len(rows) + 2.0)
    axes = figure.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    colour = dict(zip((r.key for r in rows), colours(len(rows))))
    any_interval = False
    for axis, (title, n) in zip(axes, panels):
        values = [row.mean if n is None else row.cells[n].value for row in rows]
        bars = [_bar(v, _interval(table, row, n, intervals)) for v, row in zip(values, rows)]
        any_interval |= _draw(axis, [r.label for r in rows], bars, values, [colour[r.key] for r in rows])
        axis.set_title(title, fontsize=9)
    return _finish(document, table, by_id, figure, width, any_interval, path)


def _finish(
    document: dict[str, Any],
    table: Pivot,
    by_id: dict[str, dict[str, Any]],
    figure,
    width: float,
    any_interval: bool,
    path: Path,
) -> Path:
    note = (
        "error bars: 95% bootstrap interval over conversations (runs whose result files were given)"
        if any_interval
        else "no interval: no per-query scores for these entries (reported numbers, or result files not given)"
    )
    text = f"{document['name']}: {pivot_title(table, by_id)}. {provenance(table)}; {note}"
    figure.suptitle("\n".join(textwrap.wrap(text, int(width * TITLE_CHARACTERS_PER_INCH))), fontsize=8)
    return save_png(figure, path)


def plot_leaderboard(
    document: dict[str, Any], output_dir: Path, metric: str | None = None, intervals: Intervals | None = None
) -> list[Path]:
    """One figure per table of the page; ``metric`` keeps only the tables whose cells hold that metric."""
    groups, _ = groups_of(document)
    by_id = {e["id"]: e for e in document["entries"]}
    tables = pivots(groups, document["entries"])
    names = figure_names(document, tables, by_id)
    written = []
    for table, name in zip(tables, names):
        if metric and metric not in table.metrics:
            continue
        written.append(plot_table(document, table, by_id, intervals or {}, Path(output_dir) / name))
    return written
