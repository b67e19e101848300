"""`mtrbench models`: the model aliases and the prompts they apply."""

from __future__ import annotations

import argparse

from mtrbench.retrieve.registry import all_models


def _cmd_models(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.padding import Padding
    from rich.text import Text

    # One block per alias rather than a table: the checkpoint ids are what users copy, so each is printed
    # whole on the alias's line, and the notes wrap below at the terminal's width.
    console = Console(highlight=False)
    console.print(
        Text(
            "model aliases (any HF id or local folder works too; origin: built-in or the plugin "
            "package, docs/plugins.md)",
            style="bold",
        ),
        overflow="fold",
    )
    for spec in all_models().values():
        line = Text()
        line.append(spec.alias, style="bold cyan")
        if not spec.doc_model_id:
            line.append("  " + (spec.model_id or "-"))
        console.print(line, soft_wrap=True)  # never cut or folded: the ids stay copyable
        if spec.doc_model_id:  # two towers: one id a line
            console.print(f"    query tower:   {spec.model_id}\n    context tower: {spec.doc_model_id}", soft_wrap=True)
        notes = [spec.description]
        if spec.query_prompt:
            notes.append(f"query prompt: {spec.query_prompt!r}")
        elif spec.query_prompt_name:
            notes.append(f"query prompt: <{spec.query_prompt_name}> (defined by the checkpoint)")
        if spec.doc_prompt:
            notes.append(f"doc prompt: {spec.doc_prompt!r}")
        notes.append(f"origin: {spec.origin}")
        console.print(Padding(Text("; ".join(n for n in notes if n), style="dim"), (0, 0, 0, 4)))
    return 0
