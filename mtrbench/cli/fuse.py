"""`mtrbench fuse`: several runs fused into one (ranx), written as a TREC run."""

from __future__ import annotations

import argparse
from pathlib import Path

from mtrbench.cli.common import Handler, Subparsers
from mtrbench.cli.flag_types import non_negative_int, positive_int, weights
from mtrbench.formats.run import format_run
from mtrbench.infra.atomic import atomic_write_text, ensure_parent
from mtrbench.infra.errors import UserInputError
from mtrbench.infra.numeric import json_text
from mtrbench.retrieve.fusion import FusionOptions, fuse_files


def register(sub: Subparsers) -> dict[str, Handler]:
    p = sub.add_parser(
        "fuse",
        help="fuse TREC runs (or result files) into one run: RRF, weighted sum, CombMNZ",
        description="Fuse runs with ranx. Score the output like any run: `mtrbench score --run OUT --qrels QRELS`.",
    )
    p.add_argument("runs", nargs="+", help="TREC run files, or mtrbench result JSONs (their .run.trec is read)")
    p.add_argument("--method", default="rrf", choices=["rrf", "wsum", "combmnz"], help="fusion method [rrf]")
    p.add_argument(
        "--weights",
        type=weights,
        help="wsum: one weight per run, comma separated; finite, 0 or more, not all 0 [equal, 1/n each]",
    )
    p.add_argument(
        "--norm",
        choices=["min-max", "max", "sum", "zmuv", "rank", "borda", "none"],
        help="ranx score normalization before fusing [none for rrf, min-max otherwise]",
    )
    p.add_argument(
        "--rrf-k", type=non_negative_int, help=f"rrf: RRF constant k, sum of 1/(k + rank) [{FusionOptions.rrf_k}]"
    )
    p.add_argument("--top-k", type=positive_int, help="documents kept per query [all fused documents]")
    p.add_argument("-o", "--output", required=True, help="the fused TREC run file")
    p.add_argument("--tag", help="run tag (last column) [mtrbench-fuse-METHOD]")
    return {"fuse": _cmd_fuse}


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
