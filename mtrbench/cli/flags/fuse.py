"""`mtrbench fuse`'s flags; the handlers are in mtrbench/cli/fuse.py, imported only when the command runs."""

from __future__ import annotations

from mtrbench.cli.common import Subparsers
from mtrbench.cli.flag_types import non_negative_int, positive_int, weights
from mtrbench.cli.flags.choices import DEFAULT_RRF_K


def register(sub: Subparsers) -> dict[str, str]:
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
    p.add_argument("--rrf-k", type=non_negative_int, help=f"rrf: RRF constant k, sum of 1/(k + rank) [{DEFAULT_RRF_K}]")
    p.add_argument("--top-k", type=positive_int, help="documents kept per query [all fused documents]")
    p.add_argument("-o", "--output", required=True, help="the fused TREC run file")
    p.add_argument("--tag", help="run tag (last column) [mtrbench-fuse-METHOD]")
    return {"fuse": "mtrbench.cli.fuse:_cmd_fuse"}
