"""`mtrbench tasks`'s flags; the handlers are in mtrbench/cli/tasks.py, imported only when the command runs."""

from __future__ import annotations

from mtrbench.cli.common import Subparsers, add_data_options


def register(sub: Subparsers) -> dict[str, str]:
    p = sub.add_parser("tasks", help="list task cards (--offline, --family), or `tasks show NAME [--stats]`")
    p.add_argument("action", nargs="?", default="list", choices=["list", "show"])
    p.add_argument("name", nargs="?")
    p.add_argument("--stats", action="store_true", help="load the data and print descriptive statistics")
    p.add_argument(
        "--offline",
        action="store_true",
        help="list only the tasks whose data is on this machine (bundled or at the card's local path)",
    )
    p.add_argument(
        "--family",
        help="list only the tasks of this family (the card's format: bridge, chatrag, mtrag, trec-cast, ...)",
    )
    add_data_options(p)
    return {"tasks": "mtrbench.cli.tasks:_cmd_tasks"}
