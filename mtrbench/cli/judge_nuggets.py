"""`mtrbench judge nuggets`: nugget evaluation (TREC RAG 2024/2025, TREC iKAT 2024) of generated answers, or of
existing nuggetizer assignment files. The parser here; the command's work in ``judge_nuggets_run``."""

from __future__ import annotations

import argparse

from mtrbench.cli.common import add_data_options
from mtrbench.cli.flag_types import non_negative_int, positive_int
from mtrbench.cli.llm_flags import add_llm_arguments
from mtrbench.judge.defaults import DEFAULT_MAX_PASSAGE_CHARS
from mtrbench.judge.nuggets.ikat import DEFAULT_VITAL_GRADE
from mtrbench.judge.nuggets.sources import FORMATS


def add_parser(actions: argparse._SubParsersAction) -> None:
    n = actions.add_parser(
        "nuggets",
        help="nugget evaluation (TREC RAG, iKAT): strict_vital, vital, strict_all, all per answer, turn and run",
        description="`judge nuggets GENERATIONS... --task T`: create nuggets from each turn's judged relevant "
        "passages with an LLM (or take --nuggets FILE), label each answer's support of each nugget, and score "
        "strict_vital, vital, strict_all and all (nuggetizer's definitions) per answer, turn position, topic "
        "switch, conversation and run; assignments are written in nuggetizer's format, one file per run. "
        "`judge nuggets --assignments FILE...`: score existing assignment files, no LLM.",
    )
    n.add_argument("generations", nargs="*", help="generations JSONL files, one per run (system)")
    n.add_argument(
        "--task",
        help="task name, card YAML or data folder (needed with GENERATIONS; with "
        "--assignments it adds the per-turn breakdowns and checks the turns)",
    )
    add_data_options(n)
    n.add_argument("--assignments", nargs="+", metavar="FILE", help="nuggetizer assignment JSONL files, one per run")
    n.add_argument(
        "--nuggets",
        metavar="FILE",
        help="nuggets: nuggetizer JSONL or iKAT 2024 gold nugget JSON [with GENERATIONS: created by the LLM]",
    )
    n.add_argument("--nuggets-format", choices=FORMATS, default="auto", help="layout of --nuggets [auto]")
    n.add_argument(
        "--vital-grade",
        type=non_negative_int,
        default=DEFAULT_VITAL_GRADE,
        help=f"iKAT gold nuggets graded this or higher are vital, the others okay [{DEFAULT_VITAL_GRADE}]",
    )
    n.add_argument(
        "--responses",
        metavar="FILE",
        help="with --assignments: iKAT participant responses JSON; every assigned answer must be one of them",
    )
    n.add_argument("--output", help="scores JSON [with GENERATIONS: <output-dir>/scores.json]")
    n.add_argument(
        "--output-dir",
        help="with GENERATIONS: nuggets.jsonl, assignments/<run>.jsonl, the LLM log [results/judge/nuggets/<task>]",
    )
    n.add_argument("--max-nuggets", type=positive_int, default=30, help="created nuggets per turn, at most [30]")
    n.add_argument("--passage-batch", type=positive_int, default=10, help="relevant passages per creation request [10]")
    n.add_argument("--label-batch", type=positive_int, default=10, help="nuggets per vital/okay request [10]")
    n.add_argument("--assign-batch", type=positive_int, default=10, help="nuggets per assignment request [10]")
    n.add_argument(
        "--max-passage-chars",
        type=non_negative_int,
        default=DEFAULT_MAX_PASSAGE_CHARS,
        help=f"cut each passage shown to the LLM, 0 = never [{DEFAULT_MAX_PASSAGE_CHARS}]",
    )
    n.add_argument(
        "--citations",
        action="store_true",
        help="also judge citation support: each cited passage of "
        "each answer sentence, full/partial/no support (TREC RAG 2024), with support precision and recall",
    )
    n.add_argument(
        "--human-labels",
        nargs="+",
        metavar="FILE",
        help="people's nugget assignments of some answers (nuggetizer's assignment JSONL, one file per run, the "
        "same nuggets as the LLM's): print each score's PPI mean and 95%% interval next to the LLM's mean",
    )
    n.add_argument("--quiet", action="store_true", help="no progress bars")
    add_llm_arguments(n)


def run(args: argparse.Namespace) -> int:
    from mtrbench.cli import judge_nuggets_run  # deferred: loads pytrec_eval (the scores' per-turn breakdowns)

    return judge_nuggets_run.run(args)
