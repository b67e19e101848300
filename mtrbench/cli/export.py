"""`mtrbench export`: a task as BEIR files or Hugging Face datasets."""

from __future__ import annotations

import argparse
from pathlib import Path

from mtrbench.cli.common import Handler, Subparsers, add_data_options


def register(sub: Subparsers) -> dict[str, Handler]:
    p = sub.add_parser("export", help="write a task as BEIR files or Hugging Face datasets")
    p.add_argument("task")
    p.add_argument("--format", required=True, choices=["beir", "hf"])
    p.add_argument("--out", required=True)
    add_data_options(p)
    return {"export": _cmd_export}


def _cmd_export(args: argparse.Namespace) -> int:
    from mtrbench.data import load_task
    from mtrbench.data.export import export_beir, export_hf

    task = load_task(args.task, split=args.split, data_dir=args.data_dir, corpus_path=args.corpus)
    paths = (export_beir if args.format == "beir" else export_hf)(task, Path(args.out))
    print(f"exported {task.name} ({task.split}: {len(task.queries)} queries, {len(task.corpus)} documents) to "
          + ", ".join(str(p) for p in paths))
    return 0
