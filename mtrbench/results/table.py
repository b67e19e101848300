"""Terminal tables (rich), one style for every command, drawn to fit the console's width (80 columns).

Every table is compact (a rule under the header, no vertical borders) and its title is printed on its
own line above it, wrapped at the console's width, rather than squeezed into the table's width. A number
is never cut: rich would end a squeezed cell with an ellipsis ("8.1…" for 8.1667), so every column folds
instead of cutting, each column is at least as wide as its widest number, and headers wrap; a table that
cannot fit so is drawn with narrower gaps between its columns (``TIGHT_GAP``), and one whose numbers cannot
fit the console even then is drawn wider than the console rather than cut.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.errors import MarkupError
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from mtrbench.measures import label as pretty_name

if TYPE_CHECKING:
    from mtrbench.results.result import Result

SUMMARY = ("ndcg_at_10", "recall_at_5", "recall_at_10", "recall_at_100", "mrr_at_10", "hit_rate_at_5")


# A number as tables print it: 0.4708, -0.0123, 8.17, 12%, 1,024, 3.2e-05, (1), 0.4708*.
NUMBER = re.compile(r"[(\[]?[-+\u2212]?(\d[\d,]*(\.\d+)?|\.\d+)([eE][-+]?\d+)?%?[)\]]?[*\u2020]?")


def compact_table() -> Table:
    """A table without vertical borders: nine columns of numbers fit in 80 columns."""
    return Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)


def _plain(cell: object) -> str:
    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, str):
        try:
            return Text.from_markup(cell).plain
        except MarkupError:
            return cell
    return ""


def widest_number(cell: object) -> int:
    """Length of the longest number in a cell (0 without one): the narrowest the cell may be drawn."""
    return max((len(word) for word in _plain(cell).split() if NUMBER.fullmatch(word)), default=0)


def keep_numbers_whole(table: Table) -> None:
    """No column ends in an ellipsis, and none is narrower than its widest number (headers wrap instead)."""
    for column in table.columns:
        if column.overflow == "ellipsis":
            column.overflow = "fold"
        widest = max((widest_number(cell) for cell in column.cells), default=0)
        if widest:
            column.min_width = max(column.min_width or 0, widest)


TEXT_COLUMN_FLOOR = 8  # the narrowest a column of names is folded to before the table outgrows the console
COLUMN_GAP = 3  # padding either side and the (blank) vertical rule between two columns
TIGHT_GAP = 2  # the rule and one space (cells padded on the left only), where the table fits no other way
GAPS = (COLUMN_GAP, TIGHT_GAP)  # from the preferred to the last resort


def _longest_line(cell: object) -> int:
    return max((len(line) for line in _plain(cell).splitlines()), default=0)


def column_widths(table: Table, width: int, gap: int = COLUMN_GAP) -> list[int]:
    """Widths that fit ``width`` where possible with ``gap`` columns between two columns, shaving the widest
    column first (as rich does): numbers never below their widest number; names in a ``no_wrap`` column only
    once every other text column is at its floor; headers and other text down to ``TEXT_COLUMN_FLOOR``."""
    columns = table.columns
    natural = [
        max([_longest_line(column.header)] + [_longest_line(c) for c in column.cells] + [column.min_width or 0])
        for column in columns
    ]
    numbers = [max((widest_number(c) for c in column.cells), default=0) for column in columns]
    floor = [
        max(column.min_width or 0, wide) if wide else max(column.min_width or 0, min(TEXT_COLUMN_FLOOR, n))
        for column, wide, n in zip(columns, numbers, natural)
    ]
    available = width - gap * (len(columns) - 1) - 1  # rich may give a column one more
    widths = list(natural)
    for shrinkable in ([i for i, c in enumerate(columns) if not c.no_wrap], list(range(len(columns)))):
        while sum(widths) > available:
            candidates = [i for i in shrinkable if widths[i] > floor[i]]
            if not candidates:
                break
            widest = max(candidates, key=lambda i: widths[i])
            widths[widest] -= 1
    return widths


def fits(table: Table, width: int, gap: int = COLUMN_GAP) -> bool:
    """Whether ``print_table`` can draw ``table`` within ``width`` columns with ``gap`` between two columns,
    each column at least its ``min_width`` (and its widest number)."""
    widths = column_widths(table, width, gap)
    return sum(widths) + gap * (len(widths) - 1) < width


def table_gap(table: Table, width: int) -> int:
    """The widest gap of ``GAPS`` with which the table fits ``width`` (``COLUMN_GAP`` where none does)."""
    return next((gap for gap in GAPS if fits(table, width, gap)), COLUMN_GAP)


def print_table(console: Console, table: Table) -> None:
    """The table in the one style of every command, its numbers whole.

    A table wider than the console gets column widths of its own (``column_widths``): names and headers
    fold, numbers never; where that cannot fit, the gaps between columns narrow (``TIGHT_GAP``); where even
    that cannot fit, the table comes out wider than the console (the terminal wraps its lines), never with
    a number cut or a column dropped.
    """
    table.box, table.pad_edge, table.show_edge = box.SIMPLE_HEAD, False, False
    keep_numbers_whole(table)
    if Measurement.get(console, console.options.update_width(10_000), table).maximum <= console.width:
        console.print(table)
        return
    gap = table_gap(table, console.width)
    if gap == TIGHT_GAP:
        table.padding = (0, 0, 0, 1)  # top, right, bottom, left
    widths = column_widths(table, console.width, gap)
    for column, column_width in zip(table.columns, widths):
        column.width, column.no_wrap = column_width, False
    width = console.width
    console.width = max(width, sum(widths) + gap * (len(widths) - 1))
    try:
        console.print(table)
    finally:
        console.width = width


def print_titled(console: Console, title: str, table: Table) -> None:
    """The title on its own line(s), wrapped at the console's width, then the table."""
    console.print(Text(title, style="bold"), overflow="fold")
    print_table(console, table)


def summary_keys(keys: Sequence[str], main_key: str) -> list[str]:
    """The main score and a few headline metrics; every metric is in the result JSON."""
    return [main_key] + [k for k in SUMMARY if k in keys and k != main_key]


def strategies_table(title: str, results: Sequence[Result], console: Console) -> None:
    keys = summary_keys(list(results[0].scores), results[0].main_score_key)
    table = compact_table()
    table.add_column("history", no_wrap=True)
    for key in keys:
        header = pretty_name(key).replace("Recall", "R")
        table.add_column(header + ("*" if key == results[0].main_score_key else ""), justify="right", no_wrap=True)
    table.add_column("trunc", justify="right", no_wrap=True)
    cut = any(r.truncation["question_cut"] for r in results)
    if cut:
        table.add_column("q cut", justify="right", no_wrap=True)
    for r in results:
        trunc = r.truncation
        cells = [f"{trunc['truncated_share']:.0%}"]
        if cut:
            cells.append(f"{trunc['question_cut_share']:.0%}" if trunc["question_cut"] else "0%")
        table.add_row(r.history, *(f"{r.scores[k]:.4f}" for k in keys), *cells)
    print_titled(
        console,
        title
        + (
            "; trunc: share of queries truncated, q cut: share whose question itself was cut"
            if cut
            else "; trunc: share of queries truncated"
        ),
        table,
    )


def turn_table(results: Sequence[Result], console: Console) -> None:
    key = results[0].main_score_key
    turns = sorted({int(t) for r in results for t in r.breakdowns["turn"]})
    table = compact_table()
    table.add_column("turn", justify="right", no_wrap=True)
    table.add_column("n", justify="right")
    for r in results:
        table.add_column(r.history, justify="right")
    for turn in turns:
        cells = [r.breakdowns["turn"].get(str(turn)) for r in results]
        n = next((c["n"] for c in cells if c), 0)
        table.add_row(str(turn), str(n), *(f"{c[key]:.4f}" if c else "-" for c in cells))
    if any("topic_switch" in r.breakdowns for r in results):
        for part in ("before_switch", "after_switch"):
            cells = [r.breakdowns.get("topic_switch", {}).get(part) for r in results]
            n = next((c["n"] for c in cells if c), 0)
            table.add_row(
                part.replace("_switch", ""), str(n), *(f"{c[key]:.4f}" if c else "-" for c in cells), style="italic"
            )
    print_titled(console, f"{pretty_name(key)} by turn (before/after: the task's topic switch)", table)


def scores_table(title: str, scores: dict[str, float], console: Console) -> None:
    table = compact_table()
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in scores.items():
        table.add_row(pretty_name(key), f"{value:.4f}")
    print_titled(console, title, table)
