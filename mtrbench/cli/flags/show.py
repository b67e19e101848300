"""`mtrbench show`'s flags; the handler is in mtrbench/cli/show.py, imported only when the command runs."""

from __future__ import annotations

from mtrbench.cli.common import Subparsers


def register(sub: Subparsers) -> dict[str, str]:
    p = sub.add_parser(
        "show",
        help="print finished results' tables as `mtrbench eval` printed them",
        description="Print the tables of finished `mtrbench eval` results (the strategies table, the per-turn "
        "table, warnings and analyses) as eval printed them, one table per model, task and settings; histories in "
        "mtrbench's order (a result does not record the order eval was asked for).",
    )
    p.add_argument("results", nargs="+", metavar="RESULT", help="result JSON files or folders of them (recursive)")
    return {"show": "mtrbench.cli.show:_cmd_show"}
