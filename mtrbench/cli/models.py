"""`mtrbench models`: the model aliases, their kind, the prompts they apply and what is known of each model
(mteb ModelMeta-style metadata: family, size, dimension, context, licence, release, revision)."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from mtrbench.infra.errors import unknown_name
from mtrbench.models.spec import DUAL, HYBRID, ModelSpec
from mtrbench.retrieve.registry import all_models

WIDTH = 80  # an alias's first line: the checkpoint id moves to its own line rather than pass it
_TOWERS = {DUAL: ("query tower", "context tower"), HYBRID: ("dense leg", "sparse leg")}


def _cmd_models(args: argparse.Namespace) -> int:
    models = all_models()
    if args.alias:
        if args.alias not in models:
            raise unknown_name("model alias", args.alias, models, hint="`mtrbench models` lists them.")
        specs = [models[args.alias]]
    else:
        specs = [s for s in models.values() if args.kind is None or s.kind == args.kind]
    if args.json:
        print(json.dumps([asdict(s) for s in specs], indent=2, ensure_ascii=False))
        return 0
    console = Console(highlight=False)
    console.print(
        Text(
            "model aliases: name, kind, checkpoint (docs/model-kinds.md, docs/plugins.md)",
            style="bold",
        ),
        overflow="fold",
    )
    for spec in specs:
        _print_spec(console, spec, details=args.details or bool(args.alias))
    return 0


def _print_spec(console: Console, spec: ModelSpec, *, details: bool) -> None:
    # One block per alias rather than a table: the checkpoint ids are what users copy, so each is printed whole
    # (never cut or folded), and the notes wrap below at the terminal's width.
    first = Text()
    first.append(spec.alias, style="bold cyan")
    first.append(f"  {spec.kind}", style="magenta")
    ids: list[str] = []
    if spec.doc_model_id:
        query_label, doc_label = _TOWERS.get(spec.kind, ("query encoder", "document encoder"))
        ids = [f"{query_label}: {spec.model_id}", f"{doc_label}: {spec.doc_model_id}"]
    elif len(spec.alias) + len(spec.kind) + len(spec.model_id or "-") + 4 <= WIDTH:
        first.append("  " + (spec.model_id or "-"))
    else:
        ids = [spec.model_id]
    console.print(first, soft_wrap=True)
    for line in ids:  # a label and an id too long for one line: the id whole on its own line
        tower, _, model_id = line.rpartition(": ")
        parts = [line] if len(line) + 4 <= WIDTH or not tower else [f"{tower}:", f"  {model_id}"]
        for part in parts:
            console.print(f"    {part}", soft_wrap=True)
    notes: list[tuple[str | None, str]] = [
        (None, spec.description),
        *_prompt_notes(spec),
        *_meta_notes(spec),
        ("origin", spec.origin),
    ]
    if details:
        for label, value in notes:
            if value:
                console.print(Padding(Text(f"{label}: {value}" if label else value), (0, 0, 0, 4)))
        return
    text = "; ".join(f"{label}: {value}" if label else value for label, value in notes if value)
    console.print(Padding(Text(text, style="dim"), (0, 0, 0, 4)))


def _prompt_notes(spec: ModelSpec) -> list[tuple[str | None, str]]:
    notes: list[tuple[str | None, str]] = []
    if spec.query_prompt:
        notes.append(("query prompt", repr(spec.query_prompt)))
    elif spec.query_prompt_name:
        notes.append(("query prompt", f"<{spec.query_prompt_name}> (defined by the checkpoint)"))
    if spec.doc_prompt:
        notes.append(("doc prompt", repr(spec.doc_prompt)))
    if spec.instruction_template:
        notes.append(("instruction template", repr(spec.instruction_template)))
    return notes


def _meta_notes(spec: ModelSpec) -> list[tuple[str | None, str]]:
    """Metadata as shown; what is not known is left out."""
    return [
        ("family", spec.family),
        ("parameters", human_count(spec.parameters)),
        ("vocabulary" if spec.kind == "sparse" else "dimension", str(spec.embedding_dim or "")),
        ("max tokens", str(spec.max_tokens or "")),
        ("licence", spec.license),
        ("released", spec.release_date),
        ("revision", spec.revision or ""),
        ("training data", ", ".join(spec.training_data)),
        ("reference", spec.reference),
    ]


def human_count(count: int | None) -> str:
    """109514298 -> '110M', 1543714304 -> '1.5B' (model cards round the same way)."""
    if not count:
        return ""
    for unit, size in (("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if count >= size:
            value = count / size
            return f"{value:.1f}{unit}".replace(".0", "") if value < 10 else f"{value:.0f}{unit}"
    return str(count)
