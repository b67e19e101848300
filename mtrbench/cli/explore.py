"""`mtrbench explore RESULT [RESULT ...] -o DIR [--open]`: a static site to look at systems turn by turn."""

from __future__ import annotations

import argparse
import webbrowser
from pathlib import Path

from mtrbench.cli.common import Handler, Subparsers
from mtrbench.cli.flag_types import positive_int
from mtrbench.explore.options import SNIPPET_CHARS, ExploreOptions
from mtrbench.explore.systems import load_systems
from mtrbench.infra.errors import UserInputError


def register(sub: Subparsers) -> dict[str, Handler]:
    p = sub.add_parser(
        "explore",
        help="static site: every conversation turn by turn, per system its query, top-k, measures and answers",
        description="Write a static site (no server; open DIR/index.html) for one task and one or more systems: "
        "a sortable, filterable conversations list, and a page per conversation with each turn's utterance, gold "
        "rewrite, and per system the serialized query as the retriever saw it (truncated text struck out), its "
        "top-k passages with gold grades and unjudged holes, the turn's measures and, for `mtrbench rag` "
        "results, the answer with its citations and the judge's verdict or rating. Reads the results' run and "
        "per-query files and the task (loaded as eval loads it, keeping only the passages shown).",
    )
    p.add_argument(
        "results",
        nargs="+",
        metavar="RESULT",
        help="`mtrbench eval` result JSON files or folders of them (searched recursively), all of one task",
    )
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="folder for index.html and the pages")
    p.add_argument("--open", action="store_true", help="open the list page in the web browser when written")
    p.add_argument("--top-k", type=positive_int, default=10, help="passages shown per turn and system [10]")
    p.add_argument(
        "--snippet-chars",
        type=positive_int,
        default=SNIPPET_CHARS,
        help=f"characters of passage text shown [{SNIPPET_CHARS}]",
    )
    p.add_argument("--data-dir", help="local copy of the task's data (as for `mtrbench eval`)")
    p.add_argument("--corpus", help="external corpus for tasks that do not ship one (as for `mtrbench eval`)")
    return {"explore": _cmd_explore}


def _cmd_explore(args: argparse.Namespace) -> int:
    from mtrbench.explore.site import TaskSource, write_site  # deferred: loads pytrec_eval (measure names)

    if args.top_k < 1:
        raise UserInputError("--top-k must be at least 1")
    if args.snippet_chars < 1:
        raise UserInputError("--snippet-chars must be at least 1")
    output = Path(args.output)
    if output.exists() and not output.is_dir():
        raise UserInputError(f"-o {output}: not a folder")
    systems = load_systems(args.results)
    report = write_site(
        systems,
        output,
        ExploreOptions(top_k=args.top_k, snippet_chars=args.snippet_chars),
        TaskSource(args.data_dir, args.corpus),
    )
    print(
        f"{report.conversations} conversation pages for {len(systems)} system(s) "
        f"({', '.join(s.name for s in systems)}), {report.pages_bytes / 1e6:.1f} MB"
    )
    print(f"wrote {report.index}")
    if args.open:
        webbrowser.open(report.index.resolve().as_uri())
    return 0
