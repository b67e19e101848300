"""`mtrbench qrels`'s flags; the handlers are in mtrbench/cli/qrels.py, imported only when the command runs."""

from __future__ import annotations

from mtrbench.cli.common import Subparsers
from mtrbench.cli.flag_types import positive_int, significance


def register(sub: Subparsers) -> dict[str, str]:
    qrels = sub.add_parser("qrels", help="compare relevance judgments: agreement of two qrels files")
    commands = qrels.add_subparsers(dest="qrels_command", metavar="agree")
    p = commands.add_parser(
        "agree",
        help="Cohen's kappa (binary and graded), confusion matrices and, given runs, ranking agreement of two qrels",
        description="Compare two qrels files (e.g. LLM labels from `assess --method umbrela` against human ones). "
        "Only (query, document) pairs judged in both count for kappa; the shared-pair count is reported. With "
        "--runs, each run is scored against each whole file and the two system rankings are compared (Kendall "
        "tau-b, tau_AP, swapped pairs, as `meta stability`). Lines are split on white space, as trec_eval does.",
    )
    p.add_argument("first", metavar="A", help="qrels file A (e.g. the LLM's)")
    p.add_argument("second", metavar="B", help="qrels file B (e.g. the human assessors')")
    p.add_argument(
        "--threshold", type=positive_int, default=2, help="lowest grade counted relevant for binary kappa [2]"
    )
    p.add_argument("--runs", nargs="+", metavar="RUN", default=[], help="TREC runs (three or more) to rank both ways")
    p.add_argument("--measure", default="nDCG@10", help="measure the runs are ranked by [nDCG@10]")
    p.add_argument(
        "--relevance-level", type=positive_int, help="minimum grade binary measures count relevant [the --threshold]"
    )
    p.add_argument(
        "--human-labels",
        action="store_true",
        help="B holds human labels of a subset of A's pairs: report the PPI estimate (and 95%% interval) of "
        "the relevant share and the mean grade over A's pairs, next to A's own and B's classical interval",
    )
    p.add_argument("--alpha", type=significance, default=0.05, help="intervals cover with probability 1 - alpha [0.05]")
    p.add_argument("--output", metavar="FILE.json", help="write the agreement as JSON here")

    qrels.set_defaults(qrels_parser=qrels)
    return {"qrels": "mtrbench.cli.qrels:_cmd_qrels"}
