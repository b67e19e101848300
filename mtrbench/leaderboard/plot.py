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
from mtrbench.results.plot import new_figure, save_png
from mtrbench.results.writer import safe_name

PANEL_WIDTH, LABEL_WIDTH, ROW_HEIGHT = 2.7, 2.8, 0.3  # inches
TITLE_CHARACTERS_PER_INCH = 15


def slug(text: str) -> str:
    """``MTR-SUITE, Table 3: 5 tasks`` -> ``mtr-suite-table-3-5-tasks``."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80] or "table"


def figure_names(document: dict[str, Any], tables: list[Pivot], by_id: dict[str, dict[str, Any]]) -> list[str]:
    """``NAME__what-the-table-is.png`` per table, unique."""
    names, used = [], set()
    for table in tables:
        stem = safe_name(f"{document['name']}__{slug(pivot_title(table, by_id))}")
        name, n = stem, 1
        while name in used:
            n += 1
            name = f"{stem}-{n}"
        used.add(name)
        names.append(f"{name}.png")
    return names


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


def plot_table(document: dict[str, Any], table: Pivot, by_id: dict[str, dict[str, Any]], intervals: Intervals,
               path: Path) -> Path:
    panels = _panels(table)
    rows = table.rows
    width = LABEL_WIDTH + PANEL_WIDTH * len(panels)
    figure = new_figure(width, ROW_HEIGHT * len(rows) + 2.0)
    axes = figure.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    colour = dict(zip((r.key for r in rows), colours(len(rows))))
    positions = list(range(len(rows)))
    any_interval = False
    for axis, (title, n) in zip(axes, panels):
        values, errors = [], [[], []]
        for row in rows:
            value = row.mean if n is None else row.cells[n].value
            values.append(value)
            low_high = None
            if n is not None and row.cells[n].entry_id:
                low_high = intervals.get(row.cells[n].entry_id, {}).get(table.columns[n].metric)
            if value is not None and low_high is not None:
                errors[0].append(max(0.0, value - low_high[0]))
                errors[1].append(max(0.0, low_high[1] - value))
                any_interval = True
            else:  # no interval for this bar: nothing drawn (NaN), not a zero-width bar
                errors[0].append(float("nan"))
                errors[1].append(float("nan"))
        widths = [v or 0.0 for v in values]
        drawn = [e for e in errors[1] if e == e]
        axis.barh(positions, widths, color=[colour[r.key] for r in rows], height=0.72,
                  xerr=errors if drawn else None, error_kw={"elinewidth": 1, "capsize": 2})
        reach = [v + (e if e == e else 0.0) for v, e in zip(widths, errors[1])]
        top = max([1.0] + reach)
        for y, value, end in zip(positions, values, reach):
            if value is not None:
                axis.text(end + top * 0.01, y, f"{value:.3f}" if top <= 1 else f"{value:.2f}",
                          va="center", fontsize=7)
        axis.set_xlim(0, top * 1.18)
        axis.set_title(title, fontsize=9)
        axis.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(positions)
    axes[0].set_yticklabels(["\n".join(textwrap.wrap(r.label, 34)) for r in rows], fontsize=8)
    axes[0].invert_yaxis()
    note = ("error bars: 95% bootstrap interval over conversations (runs whose result files were given)" if any_interval
            else "no interval: no per-query scores for these entries (reported numbers, or result files not given)")
    text = f"{document['name']}: {pivot_title(table, by_id)}. {provenance(table)}; {note}"
    title = "\n".join(textwrap.wrap(text, int(width * TITLE_CHARACTERS_PER_INCH)))
    figure.suptitle(title, fontsize=8)
    return save_png(figure, path)


def plot_leaderboard(document: dict[str, Any], output_dir: Path, metric: str | None = None,
                     intervals: Intervals | None = None) -> list[Path]:
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
