"""`mtrbench models`'s flags, and --model-kind, which every command that builds a retriever from --model takes;
the handlers are in mtrbench/cli/models.py, imported only when the command runs."""

from __future__ import annotations

import argparse

from mtrbench.cli.common import Subparsers
from mtrbench.cli.flags.choices import ALL_KINDS, MODEL_KINDS


def add_model_kind(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model-kind",
        choices=MODEL_KINDS,
        help="what --model is, for a checkpoint whose files cannot tell (a bare transformers folder); a kind that "
        "contradicts its files or alias is an error (docs/model-kinds.md) [told from the checkpoint]",
    )


def register(sub: Subparsers) -> dict[str, str]:
    p = sub.add_parser(
        "models",
        help="list model aliases: kind, checkpoint, prompts and metadata",
        description="Model aliases (any HF id or local folder works too; its kind is told from its files). "
        "`mtrbench models ALIAS` shows one alias in full.",
    )
    p.add_argument("alias", nargs="?", help="show this alias in full (every metadata field)")
    p.add_argument("--kind", choices=ALL_KINDS, help="only aliases of this kind")
    p.add_argument("--details", action="store_true", help="every metadata field of each alias listed")
    p.add_argument("--json", action="store_true", help="the aliases as JSON (every field)")
    return {"models": "mtrbench.cli.models:_cmd_models"}
