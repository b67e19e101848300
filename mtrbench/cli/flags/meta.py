"""`mtrbench meta`'s flags; the handlers are in mtrbench/cli/meta.py, imported only when the command runs."""

from __future__ import annotations

import argparse

from mtrbench.cli.common import Subparsers
from mtrbench.cli.flag_types import positive_float, positive_int, seed, significance


def _add_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--results",
        nargs="+",
        metavar="PATH",
        default=[],
        help="eval results (<task>.json or <task>.per_query.jsonl), folders of them, or leaderboard JSON",
    )
    p.add_argument("--runs", nargs="+", metavar="RUN", default=[], help="TREC run files of one task (with --qrels)")
    p.add_argument("--qrels", help="TREC qrels that score --runs")
    p.add_argument(
        "--relevance-level",
        type=positive_int,
        default=1,
        help="minimum grade counted relevant by binary measures (TREC CAsT: 2) [1]",
    )
    p.add_argument(
        "--measures",
        default="",
        help="measure strings, comma list (nDCG@3,R@10) [runs: nDCG@10; results: their main score]",
    )
    p.add_argument("--tasks", default="", help="tasks among --results, comma list [every task]")


def _add_resampling(p: argparse.ArgumentParser, samples: int) -> None:
    p.add_argument(
        "--unit",
        default="conversation",
        help="what moves together when resampling: conversation (all its turns) or query; "
        "power takes a comma list to compare them [conversation]",
    )
    p.add_argument(
        "--samples", type=positive_int, default=samples, help=f"resamples of randomized procedures [{samples}]"
    )
    p.add_argument("--seed", type=seed, default=0, help="random seed: the same seed gives the same JSON [0]")


def _add_outputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", metavar="FILE.json", help="write the analysis as JSON here")
    p.add_argument("--plot", metavar="FILE.png|svg", help="draw the figure here")


def register(sub: Subparsers) -> dict[str, str]:
    meta = sub.add_parser("meta", help="discriminative power, ranking stability and topic-set size of a benchmark")
    commands = meta.add_subparsers(dest="meta_command", metavar="power|stability|size")

    p = commands.add_parser("power", help="discriminative power: ASL of every system pair, share below alpha")
    _add_inputs(p)
    p.add_argument("--test", default="t", help="paired test: t, randomization, bootstrap, tukey-hsd [t]")
    p.add_argument("--alpha", type=significance, default=0.05, help="significance level [0.05]")
    _add_resampling(p, 1000)
    _add_outputs(p)

    p = commands.add_parser(
        "stability",
        help="Kendall tau-b, tau_AP and swapped pairs between two conditions; "
        "swap rate and minimum detectable difference",
    )
    _add_inputs(p)
    condition = p.add_argument_group("the second condition (exactly one)")
    condition.add_argument("--vs-qrels", help="the runs scored against these qrels (e.g. refined)")
    condition.add_argument("--vs-relevance-level", type=positive_int, help="the runs scored at this relevance level")
    condition.add_argument("--vs-measure", help="the same systems under this measure")
    condition.add_argument(
        "--vs-results",
        nargs="+",
        metavar="PATH",
        help="other results of the same systems, paired in order (another history, task)",
    )
    condition.add_argument(
        "--vs-runs", nargs="+", metavar="RUN", help="other runs, paired in order (scored against --vs-qrels or --qrels)"
    )
    p.add_argument(
        "--subset-size", type=positive_int, help="units in each of the swap method's two sets [half of them]"
    )
    p.add_argument(
        "--bin-width", type=positive_float, default=0.01, help="width of the swap method's difference bins [0.01]"
    )
    _add_resampling(p, 1000)
    _add_outputs(p)

    p = commands.add_parser("size", help="topic-set size design (Sakai 2016): units needed to detect --delta")
    _add_inputs(p)
    p.add_argument(
        "--delta",
        type=positive_float,
        required=True,
        help="minimum difference to detect (t-test) and minimum range across systems (ANOVA)",
    )
    p.add_argument("--alpha", type=significance, default=0.05, help="significance level [0.05]")
    p.add_argument("--power", type=significance, default=0.8, help="wanted power, 1 - beta [0.8]")
    p.add_argument("--unit", default="conversation", help="what the size counts: conversation or query [conversation]")
    _add_outputs(p)

    meta.set_defaults(meta_parser=meta)
    return {"meta": "mtrbench.cli.meta:_cmd_meta"}
