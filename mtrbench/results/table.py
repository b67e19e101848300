"""Terminal tables (rich), drawn to fit the console's width (80 columns when it is 80 wide).

Every table is compact (a rule under the header, no vertical borders) and its title is printed on its
own line above it, wrapped at the console's width, rather than squeezed into the table's width.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from mtrbench.measures import label as pretty_name

if TYPE_CHECKING:
    from mtrbench.results.result import Result

SUMMARY = ("ndcg_at_10", "recall_at_5", "recall_at_10", "recall_at_100", "mrr_at_10", "hit_rate_at_5")


def compact_table() -> Table:
    """A table without vertical borders: nine columns of numbers fit in 80 columns."""
    return Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)


def print_titled(console: Console, title: str, table: Table) -> None:
    """The title on its own line(s), wrapped at the console's width, then the table."""
    console.print(Text(title, style="bold"), overflow="fold")
    console.print(table)


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
    print_titled(console, title + ("; trunc: share of queries truncated, q cut: share whose question itself was cut"
                                   if cut else "; trunc: share of queries truncated"), table)


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
            table.add_row(part.replace("_switch", ""), str(n), *(f"{c[key]:.4f}" if c else "-" for c in cells),
                          style="italic")
    print_titled(console, f"{pretty_name(key)} by turn (before/after: the task's topic switch)", table)


def scores_table(title: str, scores: dict[str, float], console: Console) -> None:
    table = compact_table()
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in scores.items():
        table.add_row(pretty_name(key), f"{value:.4f}")
    print_titled(console, title, table)
