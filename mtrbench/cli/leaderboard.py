"""`mtrbench leaderboard build|verify|show|html` and `mtrbench plot`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mtrbench.cli.screen import screen_command
from mtrbench.infra.errors import MtrbenchError
from mtrbench.leaderboard.build import BuildReport, build_document, collect, write_document
from mtrbench.leaderboard.schema import load
from mtrbench.leaderboard.verify import FAIL, REFUSED, STATUSES, LocalOptions, verify

NOTES_SHOWN = 3  # notes on separated entries that `leaderboard build` prints without --verbose


def _cmd_leaderboard(args: argparse.Namespace) -> int:
    return {"build": _build, "verify": _verify, "show": _show, "html": _html}[args.leaderboard_action](args)


def _build(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.text import Text

    output = Path(args.output)
    if output.suffix != ".json":
        raise MtrbenchError(f"-o {output}: a leaderboard file name must end in .json")
    report = BuildReport()
    sourced = collect(args.inputs, report)
    document = build_document(
        sourced,
        name=args.name or output.stem,
        description=args.description,
        keep_newest=args.keep_newest,
        report=report,
    )
    write_document(document, output)
    console = Console()
    status = Console(stderr=True)
    for warning in report.warnings:
        status.print(f"[yellow]warning:[/yellow] {warning}", soft_wrap=True)
    skipped = f", {report.n_skipped} other JSON file(s) skipped" if report.n_skipped else ""
    console.print(
        f"{len(document['entries'])} entries from {report.n_results} result file(s) and "
        f"{report.n_leaderboards} leaderboard(s){skipped}; {len(document['groups'])} comparable group(s)"
    )
    notes = document["separations"]
    shown = notes if args.verbose else notes[:NOTES_SHOWN]
    if notes:
        console.print(
            f"{len(notes)} note(s) on why entries are kept apart"
            + (
                ":"
                if len(shown) == len(notes)
                else f', the first {len(shown)} (all: --verbose, or the file\'s "separations"):'
            )
        )
    for sentence in shown:
        console.print(Text(f"- {sentence}"))
    console.print(f"wrote {output}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from rich.console import Console

    if args.tolerance < 0:
        raise MtrbenchError("--tolerance must be >= 0")
    path, document = load(args.leaderboard)
    only = [i.strip() for chunk in (args.only or []) for i in chunk.split(",") if i.strip()] or None
    console = Console()
    status = Console(stderr=True)  # progress (refusals as they happen, re-runs) on stderr; the table on stdout
    checks = verify(
        document,
        path,
        tolerance=args.tolerance,
        only=only,
        results_dir=Path(args.results_dir) if args.results_dir else None,
        work_dir=Path(args.work_dir) if args.work_dir else None,
        rerun=args.rerun,
        local=LocalOptions(*(Path(p) if p else None for p in (args.cache_dir, args.data_dir, args.corpus))),
        screen=screen_command,
        say=lambda message: status.print(message, style="dim", soft_wrap=True, markup=False, highlight=False),
    )
    from rich.text import Text

    from mtrbench.results.table import print_titled  # deferred: loads pytrec_eval

    table, notes = _checks_table(checks, args.tolerance)
    print_titled(console, f"verify {path}", table)
    # How each entry was checked (often a result path) under the table, not squeezed into a column of it.
    for entry_id, note in notes:
        line = Text(f"{entry_id}: ", style="bold")
        line.append(note)  # texts from the file: plain text, no markup
        console.print(line, overflow="fold", highlight=False)
    counts = {status: sum(c.status == status for c in checks) for status in STATUSES}
    console.print(", ".join(f"{counts[s]} {s}" for s in STATUSES) + f" (tolerance {args.tolerance:g})")
    return 1 if counts[FAIL] or counts[REFUSED] else 0


def _checks_table(checks, tolerance):
    """The table of values per entry, and (entry, how / why) notes printed below it."""
    from rich.markup import escape

    from mtrbench.measures import label as pretty_name  # deferred: loads pytrec_eval
    from mtrbench.results.table import compact_table  # deferred: loads pytrec_eval

    style = {"OK": "green", "FAIL": "bold red", "SKIP": "yellow", "REFUSED": "bold magenta"}
    table = compact_table()
    for column, justify in (
        ("entry", "left"),
        ("status", "left"),
        ("metric", "left"),
        ("expected", "right"),
        ("obtained", "right"),
    ):
        table.add_column(column, justify=justify, overflow="fold", no_wrap=column != "entry")
    number = lambda v: "-" if v is None else f"{v:.6f}"  # noqa: E731
    notes = []
    for c in checks:
        status = f"[{style[c.status]}]{c.status}[/{style[c.status]}]"
        if c.mismatches:
            for n, m in enumerate(c.mismatches):
                table.add_row(
                    escape(c.entry_id) if n == 0 else "",
                    status if n == 0 else "",
                    pretty_name(m.metric),
                    number(m.expected),
                    number(m.obtained),
                )
            notes.append((c.entry_id, c.reason + f" ({c.how})"))
        else:
            note = c.reason or (f"{c.how}: {c.compared} metrics within {tolerance:g}" if c.status == "OK" else c.how)
            table.add_row(
                escape(c.entry_id),
                status,
                escape(pretty_name(c.main_score)) if c.main_score else "",
                number(c.expected),
                number(c.obtained),
            )
            notes.append((c.entry_id, note))
    return table, notes


def _show(args: argparse.Namespace) -> int:
    from rich.console import Console

    from mtrbench.leaderboard.render import render  # deferred: loads pytrec_eval

    _, document = load(args.leaderboard)
    scores = _per_query_scores(document, args.results) if args.results else None
    render(document, Console(), task=args.task, metric=args.metric, scores=scores)
    return 0


def _per_query_scores(document: dict, results: list[str]) -> dict:
    from mtrbench.leaderboard.turns import per_query_scores  # deferred: loads numpy

    missing = [r for r in results if not Path(r).is_dir()]
    if missing:
        raise MtrbenchError(f"--results {missing[0]}: not a folder")
    warnings: list[str] = []
    scores = per_query_scores(document, [Path(r) for r in results], warnings)
    if warnings:
        print(
            f"warning: {len(warnings)} result file(s) skipped for the tie-aware ranks, e.g. {warnings[0]}",
            file=sys.stderr,
        )
    return scores


def _html(args: argparse.Namespace) -> int:
    from mtrbench.leaderboard.html import write_page  # deferred: loads pytrec_eval

    _, document = load(args.leaderboard)
    turns = scores = None
    if args.results:
        from mtrbench.leaderboard.turns import turn_curves  # deferred: loads numpy

        missing = [r for r in args.results if not Path(r).is_dir()]
        if missing:
            raise MtrbenchError(f"--results {missing[0]}: not a folder")
        warnings: list[str] = []
        turns = turn_curves(document, [Path(r) for r in args.results], warnings)
        if warnings:
            print(
                f"warning: {len(warnings)} result file(s) skipped for the per-turn curves, e.g. {warnings[0]}",
                file=sys.stderr,
            )
        print(f"per-turn curves for {len(turns)} of {len(document['entries'])} entries", file=sys.stderr)
        scores = _per_query_scores(document, args.results)
    page = write_page(document, Path(args.output), turns, scores)
    print(f"wrote {page}")
    return 0


def _cmd_plot(args: argparse.Namespace) -> int:
    from mtrbench.leaderboard.plot import plot_leaderboard  # deferred: loads pytrec_eval
    from mtrbench.results.plot import plot_turn_curves  # deferred: loads pytrec_eval

    if not args.results and not args.leaderboard:
        raise MtrbenchError("nothing to plot: give result files/folders and/or --leaderboard NAME")
    if args.k < 1:
        raise MtrbenchError("--k must be positive")
    written = []
    if args.results:
        written += plot_turn_curves(args.results, Path(args.output), k=args.k)
    if args.leaderboard:
        _, document = load(args.leaderboard)
        intervals = None
        if args.results:  # the entries' own result files: intervals on their bars
            from mtrbench.leaderboard.turns import entry_intervals  # deferred: loads numpy

            intervals = entry_intervals(document, [Path(r) for r in args.results])
        written += plot_leaderboard(document, Path(args.output), metric=args.metric, intervals=intervals)
    for path in written:
        print(f"wrote {path}")
    return 0
