"""Terminal tables (rich)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from mtrbench.measures import label as pretty_name

SUMMARY = ("ndcg_at_10", "recall_at_5", "recall_at_10", "recall_at_100", "mrr_at_10", "hit_rate_at_5")


def summary_keys(keys: Sequence[str], main_key: str) -> list[str]:
    """The main score and a few headline metrics; every metric is in the result JSON."""
    return [main_key] + [k for k in SUMMARY if k in keys and k != main_key]


def strategies_table(title: str, results, console: Console) -> None:
    keys = summary_keys(results[0].evaluation.metric_keys, results[0].main_score_key)
    table = Table(title=title, title_justify="left")
    table.add_column("history", no_wrap=True)
    for key in keys:
        header = pretty_name(key).replace("Recall", "R")
        table.add_column(header + ("*" if key == results[0].main_score_key else ""), justify="right", no_wrap=True)
    table.add_column("trunc", justify="right")
    for r in results:
        trunc = r.truncation
        table.add_row(r.history, *(f"{r.scores[k]:.4f}" for k in keys),
                      f"{trunc['truncated_share']:.0%}" + (f" (question cut {trunc['question_cut_share']:.0%})"
                                                           if trunc["question_cut"] else ""))
    console.print(table)


def turn_table(results, console: Console) -> None:
    key = results[0].main_score_key
    turns = sorted({int(t) for r in results for t in r.breakdowns["turn"]})
    table = Table(title=f"{pretty_name(key)} by turn (before/after: the task's topic switch)", title_justify="left")
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
    console.print(table)


def scores_table(title: str, scores: dict[str, float], console: Console) -> None:
    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in scores.items():
        table.add_row(pretty_name(key), f"{value:.4f}")
    console.print(table)
