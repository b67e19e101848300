"""`mtrbench models`'s flags; the handlers are in mtrbench/cli/models.py, imported only when the command runs."""

from __future__ import annotations

from mtrbench.cli.common import Subparsers


def register(sub: Subparsers) -> dict[str, str]:
    sub.add_parser("models", help="list model aliases and their prompts")
    return {"models": "mtrbench.cli.models:_cmd_models"}
