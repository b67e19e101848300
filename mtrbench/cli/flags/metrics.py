"""`mtrbench metrics`'s flags; the handlers are in mtrbench/cli/metrics.py, imported only when the command runs."""

from __future__ import annotations

from mtrbench.cli.common import Subparsers


def register(sub: Subparsers) -> dict[str, str]:
    p = sub.add_parser("metrics", help="list measure families: accepted names, definition, citation")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    return {"metrics": "mtrbench.cli.metrics:_cmd_metrics"}
