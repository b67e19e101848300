"""`mtrbench leaderboard build|verify|show|html` and `mtrbench plot`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mtrbench.cli.common import Handler, Subparsers
from mtrbench.cli.flag_types import non_negative_float, positive_int
from mtrbench.cli.screen import screen_command
from mtrbench.infra.errors import MtrbenchError
from mtrbench.leaderboard.build import BuildReport, build_document, collect, write_document
from mtrbench.leaderboard.schema import load
from mtrbench.leaderboard.verify import FAIL, REFUSED, STATUSES, LocalOptions, verify

NOTES_SHOWN = 3  # notes on separated entries that `leaderboard build` prints without --verbose


def _add_verify_parser(actions: Subparsers) -> None:
    v = actions.add_parser(
        "verify",
        help="re-derive entries: compare existing results or re-run their commands",
        description="Compare each entry with an existing result, else re-run its recorded "
        "`mtrbench eval` command. Only registered model aliases or Hugging Face ids, "
        "registered task names and checked settings are re-run: an entry whose "
        "command names a local path, --trust-remote-code or any option that chooses "
        "where files are read or written is REFUSED (exit status 1).",
    )
    v.add_argument("leaderboard", metavar="NAME|FILE")
    v.add_argument(
        "--tolerance", type=non_negative_float, default=1e-4, help="largest accepted absolute difference [1e-4]"
    )
    v.add_argument(
        "--only", action="append", metavar="ID", help="verify only this entry id (repeatable, or a comma list)"
    )
    v.add_argument("--results-dir", help="folder of existing results to compare with before re-running anything")
    v.add_argument("--rerun", action="store_true", help="re-run every command even when its result exists")
    v.add_argument("--work-dir", help="keep re-run results here [a temporary folder, removed afterwards]")
    v.add_argument("--cache-dir", help="corpus embedding cache for re-runs [`mtrbench eval`'s default]")
    v.add_argument("--data-dir", help="local copy of the task's data for re-runs (with --only, for one task)")
    v.add_argument("--corpus", help="external corpus for re-runs of tasks that do not ship one")


def register(sub: Subparsers) -> dict[str, Handler]:
    p = sub.add_parser(
        "leaderboard",
        help="build, verify, show or publish leaderboard JSON",
        description="Leaderboards aggregate result files into comparable groups with per-task ranks "
        "and cross-task averages. NAME is leaderboards/NAME.json (here or shipped) or a "
        "path.",
    )
    actions = p.add_subparsers(dest="leaderboard_action", required=True, metavar="build|verify|show|html")

    b = actions.add_parser("build", help="aggregate result files (and leaderboards) into a leaderboard JSON")
    b.add_argument(
        "inputs",
        nargs="+",
        metavar="RESULTS",
        help="result JSON files or folders (searched recursively); leaderboard JSON files to merge",
    )
    b.add_argument("-o", "--output", required=True, help="leaderboard file to write, e.g. leaderboards/NAME.json")
    b.add_argument("--name", help="leaderboard name [the output file's stem]")
    b.add_argument("--description", default="", help="one line shown above the tables")
    b.add_argument(
        "--keep-newest",
        action="store_true",
        help="for duplicate entries (same model, task and settings) keep the newest instead of failing",
    )
    b.add_argument(
        "--verbose",
        action="store_true",
        help="print every note on why entries are kept apart [a count and the first few]",
    )

    _add_verify_parser(actions)

    _add_show_and_html(actions)
    _add_plot(sub)
    return {"leaderboard": _cmd_leaderboard, "plot": _cmd_plot}


def _add_show_and_html(actions: Subparsers) -> None:
    s = actions.add_parser("show", help="print the leaderboard as terminal tables, one per comparable group")
    s.add_argument("leaderboard", metavar="NAME|FILE")
    s.add_argument("--task", help="only this task, with its headline metrics")
    s.add_argument("--metric", help="metric key to show, e.g. recall_at_20 [each task's main score]")
    s.add_argument(
        "--results",
        action="append",
        metavar="DIR",
        help="result folder (repeatable) holding the entries' `mtrbench eval` results: ranks become tie-aware "
        "(neighbours not significantly different share a rank group such as 1-3; paired t-test on conversation "
        "means, Holm over the adjacent pairs, alpha 0.05) where every system of a table has its per-query file",
    )

    h = actions.add_parser("html", help="write a static page: a section per comparable group, tables, charts")
    h.add_argument("leaderboard", metavar="NAME|FILE")
    h.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="DIR",
        help="folder for index.html; a single-task table's rows link to DIR/explore/TASK/index.html when "
        "`mtrbench explore ... -o DIR/explore/TASK` built one there",
    )
    h.add_argument(
        "--results",
        action="append",
        metavar="DIR",
        help="result folder (repeatable) holding the entries' `mtrbench eval` results: adds per-turn "
        "curves with bootstrap bands over conversations, and tie-aware ranks (as `leaderboard show --results`)",
    )


def _add_plot(sub: Subparsers) -> None:
    plot = sub.add_parser("plot", help="PNG figures: per-turn Recall@k/nDCG@k by history strategy; leaderboard bars")
    plot.add_argument("results", nargs="*", metavar="RESULTS", help="result JSON files or folders")
    plot.add_argument("-o", "--output", required=True, metavar="DIR")
    plot.add_argument("--k", type=positive_int, default=10, help="cutoff of the per-turn curves [10]")
    plot.add_argument(
        "--leaderboard",
        metavar="NAME|FILE",
        help="also draw this leaderboard's bars, a figure per table of its page; runs whose result "
        "files are among RESULTS get 95%% bootstrap intervals (conversations resampled)",
    )
    plot.add_argument("--metric", help="only the leaderboard figures whose bars show this metric [all]")


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
