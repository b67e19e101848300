"""A finished result's tables, as `mtrbench eval` prints them when it evaluates it: the scores of each history
(one row a history), the main score by turn, the warnings the result records and its analyses.

``print_results`` is what eval prints for one (model, task) pair; ``show`` reads finished results (a result file,
or every result under a folder) and prints the same, one table per (model, task, settings but the history), so a
result evaluated earlier, or skipped as finished by a re-run, is shown exactly as the run that made it showed it.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from mtrbench.infra.errors import UserInputError
from mtrbench.results.documents import find_inputs
from mtrbench.results.result import Result
from mtrbench.results.table import scores_table, strategies_table, turn_table
from mtrbench.serialize.history import ALL_HISTORIES


def print_analyses(analyses: dict[str, dict], console: Console) -> None:
    """The refined-qrels and RAGAlign analyses a result records (``Result.analyses()``)."""
    if "refined_qrels" in analyses:
        ref = analyses["refined_qrels"]
        scores_table(
            "BRIDGE Hole@k (share of the top-k that refinement newly found relevant)", ref["hole_bridge"], console
        )
        headline = {k: v for k, v in ref["difference"].items() if k.endswith("_at_10")}
        scores_table("refined minus original (at 10)", headline, console)
    for label, parts in analyses.get("ragalign", {}).items():
        for kind, r in parts.items():
            p = f", p={r['p_value']:.3g}" if r["p_value"] is not None else ""
            console.print(
                f"RAGAlign ({label}, {kind}, {r['metric']}): {r['value']:.4f} (n={r['n']}{p}"
                f"{', ' + str(r['missing_generation']) + ' without generation judgment' if r['missing_generation'] else ''})"
            )


def print_results(model: str, task: str, results: Sequence[Result], console: Console, status: Console) -> None:
    """One (model, task) pair's results, histories in the order given: tables and analyses on ``console``,
    warnings on ``status`` (eval's stdout and stderr)."""
    first = results[0]
    title = f"{task} · {model} · {first.n_evaluated} queries evaluated"
    if first.n_excluded:
        title += f", {first.n_excluded} without gold excluded"
    protocol = first.settings.get("protocol", "trec_eval")
    if protocol != "trec_eval":
        title += f" · protocol {protocol}"
    if first.partial_corpus is not None:
        title += f" · {first.partial_corpus.note()}"
    strategies_table(title, results, console)
    turn_table(results, console)
    for what, count in sorted(first.warnings.items()):
        if all(r.warnings.get(what) == count for r in results):
            status.print(f"[yellow]warning:[/yellow] {count} {what}", soft_wrap=True)
    for r in results:  # a history's own (its rewriter's failures): named, and its query count
        for what, count in sorted(r.warnings.items()):
            if not all(other.warnings.get(what) == count for other in results):
                status.print(
                    f"[yellow]warning:[/yellow] {r.history}: {count} {what} ({r.n_evaluated} evaluated)", soft_wrap=True
                )
    for r in results:
        if r.analyses():
            console.print(f"[bold]{r.history}[/bold]")
            print_analyses(r.analyses(), console)


def _pair(result: Result) -> str:
    """What one eval table holds in common: the model as requested, the task and every setting but the history."""
    identity = {k: v for k, v in result.result_settings.identity().items() if k not in ("history", "rewriter")}
    return json.dumps([result.requested_model, result.task_name, identity], sort_keys=True, default=str)


def _history_rank(result: Result) -> tuple[int, str]:
    """eval shows histories in the order asked for; a finished result does not record it: mtrbench's order of
    the named histories, then by name."""
    history = result.history or ""
    return (ALL_HISTORIES.index(history) if history in ALL_HISTORIES else len(ALL_HISTORIES), history)


def finished_results(target: str | Path) -> list[list[Result]]:
    """The results in ``target`` (a result file, or a folder searched recursively) grouped as eval prints them:
    one group a (model, task, settings but the history), its histories in order."""
    inputs = find_inputs([target])
    if not inputs.results:
        raise UserInputError(f"{target}: no `mtrbench eval` result in it")
    groups: dict[str, list[Result]] = {}
    for path in inputs.results:
        result = Result.load(path)
        groups.setdefault(_pair(result), []).append(result)
    return [sorted(group, key=_history_rank) for group in groups.values()]


def show_results(target: str | Path, console: Console, status: Console) -> None:
    """Print the finished results in ``target`` as eval printed them (``mtrbench show RESULT``)."""
    for group in finished_results(target):
        print_results(group[0].requested_model, group[0].task_name, group, console, status)


def show(target: str | Path, width: int = 80) -> str:
    """:func:`show_results` as plain text, ``width`` columns wide, tables then warnings (eval's stdout then its
    stderr for the same results, without colour)."""
    tables, warnings = io.StringIO(), io.StringIO()
    show_results(target, _plain_console(tables, width), _plain_console(warnings, width))
    return tables.getvalue() + warnings.getvalue()


def _plain_console(file: io.StringIO, width: int) -> Console:
    return Console(file=file, width=width, color_system=None, force_terminal=False, highlight=False)
