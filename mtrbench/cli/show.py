"""`mtrbench show RESULT...`: a finished result's tables, as eval printed them."""

from __future__ import annotations

import argparse

from rich.console import Console

from mtrbench.results.show import show_results


def _cmd_show(args: argparse.Namespace) -> int:
    console, status = Console(), Console(stderr=True)
    for target in args.results:
        show_results(target, console, status)
    return 0
