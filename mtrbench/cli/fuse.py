"""`mtrbench fuse`: several runs fused into one (ranx), written as a TREC run."""

from __future__ import annotations

import argparse
from pathlib import Path

from mtrbench.formats.run import format_run
from mtrbench.infra.atomic import atomic_write_text, ensure_parent
from mtrbench.infra.errors import UserInputError
from mtrbench.infra.numeric import json_text
from mtrbench.retrieve.fusion import FusionOptions, fuse_files


def _cmd_fuse(args: argparse.Namespace) -> int:
    if args.rrf_k is not None and args.method != "rrf":
        raise UserInputError(f"--rrf-k applies to --method rrf only, not {args.method}")
    rrf_k = FusionOptions.rrf_k if args.rrf_k is None else args.rrf_k
    options = FusionOptions(method=args.method, weights=args.weights, norm=args.norm, rrf_k=rrf_k, top_k=args.top_k)
    ensure_parent(args.output)  # a bad -o fails before the runs are read and fused
    run, files = fuse_files(args.runs, options)
    output = Path(args.output)
    atomic_write_text(output, format_run(run, args.tag or f"mtrbench-fuse-{args.method}"))
    sidecar = output.with_name(output.name + ".fusion.json")
    atomic_write_text(
        sidecar,
        json_text(
            {"inputs": [str(f) for f in files], **options.settings(len(files)), "queries": len(run)},
            path=sidecar,
            indent=2,
        )
        + "\n",
    )
    print(f"fused {len(files)} runs ({args.method}, norm {options.normalization}) over {len(run)} queries: {output}")
    return 0
