"""`mtrbench explore`'s flags; the handlers are in mtrbench/cli/explore.py, imported only when the command runs."""

from __future__ import annotations

from mtrbench.cli.common import Subparsers
from mtrbench.cli.flag_types import positive_int
from mtrbench.explore.options import SNIPPET_CHARS


def register(sub: Subparsers) -> dict[str, str]:
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
    return {"explore": "mtrbench.cli.explore:_cmd_explore"}
