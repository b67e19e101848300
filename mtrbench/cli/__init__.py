"""``mtrbench`` command line (the parser and dispatcher are in ``mtrbench.cli.app``).

``mtrbench --version`` is answered here, before any command module is imported, so it costs no more
than starting Python.
"""

from __future__ import annotations

import argparse
import sys

from mtrbench import __version__


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if list(arguments) == ["--version"]:
        print(f"mtrbench {__version__}")
        return 0
    from mtrbench.cli.app import main as run  # deferred: --version answers without the command modules

    return run(argv)


def build_parser() -> argparse.ArgumentParser:
    from mtrbench.cli.app import build_parser as build  # deferred: as in main

    return build()


__all__ = ["build_parser", "main"]
