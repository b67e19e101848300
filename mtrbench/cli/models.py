"""`mtrbench models`: the model aliases and the prompts they apply."""

from __future__ import annotations

import argparse

from mtrbench.cli.common import Handler, Subparsers


def register(sub: Subparsers) -> dict[str, Handler]:
    sub.add_parser("models", help="list model aliases and their prompts")
    return {"models": _cmd_models}


def _cmd_models(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from mtrbench.retrieve.registry import REGISTRY

    table = Table(title="model aliases (any HF id or local folder works too)", title_justify="left")
    for column in ("alias", "checkpoint", "query prompt", "doc prompt", "notes"):
        table.add_column(column)
    for spec in REGISTRY.values():
        query = repr(spec.query_prompt) if spec.query_prompt else (f"<{spec.query_prompt_name}>" if spec.query_prompt_name else "")
        table.add_row(spec.alias, spec.model_id or "-", query, repr(spec.doc_prompt) if spec.doc_prompt else "",
                      spec.description)
    Console().print(table)
    return 0
