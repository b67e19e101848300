"""`mtrbench score`'s flags; the handlers are in mtrbench/cli/score.py, imported only when the command runs."""

from __future__ import annotations

import argparse

from mtrbench.cli.common import Subparsers, add_analysis_options
from mtrbench.cli.flag_types import non_negative_float, positive_int, seed, significance
from mtrbench.cli.flags.choices import OFFICIAL_PROTOCOLS


def register(sub: Subparsers) -> dict[str, str]:
    _add_score_parser(sub)
    _add_compare_parser(sub)
    _add_pool_parser(sub)
    return {
        "score": "mtrbench.cli.score:_cmd_score",
        "compare": "mtrbench.cli.score:_cmd_compare",
        "pool": "mtrbench.cli.score:_cmd_pool",
    }


def _add_score_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "score",
        help="score a TREC run file against a TREC qrels file or a task's qrels; or an "
        "MTRAGEval Task A prediction file as MTRAG's retrieval script does",
    )
    _add_score_inputs(p)
    _add_score_measures(p)
    add_analysis_options(p)
    p.add_argument("--per-query", action="store_true", help="print per-query values as JSON lines")
    p.add_argument("--output", help="write the scores as JSON here")


def _add_score_inputs(p: argparse.ArgumentParser) -> None:
    """What is scored (a run or a Task A prediction file) and against which qrels."""
    scored = p.add_mutually_exclusive_group(required=True)
    scored.add_argument("--run", help="TREC run file, or a JSON run {qid: {docid: score}} (BEIR, pytrec_eval)")
    scored.add_argument(
        "--predictions",
        metavar="FILE.jsonl",
        help="MTRAGEval Task A prediction file (task_id, Collection, contexts with document_id and "
        "score), scored per collection and 'all' under official:mtrag; qrels from --data-dir "
        "(an IBM/mt-rag-benchmark clone or a folder of <domain>.tsv). With --task ikat-*: a TREC iKAT run "
        "(the official JSON; 2025: JSON lines), its passage ranking (ikat-2023-ptkb: its PTKB ranking) "
        "scored against the task's qrels after the organisers' structural checks",
    )
    judged = p.add_mutually_exclusive_group()
    judged.add_argument("--qrels", help="TREC qrels file")
    judged.add_argument("--task", help="take the qrels of this task (`mtrbench tasks`), card YAML or data folder")
    p.add_argument("--split", help="with --task: split [the card's eval split]")
    p.add_argument(
        "--data-dir",
        help="with --task: local copy of the task's data, laid out as published; with "
        "--predictions: the folder holding MTRAG's qrels",
    )
    p.add_argument(
        "--passage-db",
        metavar="DB",
        help="with an iKAT run: the organisers' passage-id database (sqlite, table passage_ids), to check "
        "every passage id is in the collection [not checked]",
    )


def _add_score_measures(p: argparse.ArgumentParser) -> None:
    """The cutoffs, relevance level, measures and protocol of `score`."""
    p.add_argument("--k", dest="k_values", help="cutoffs [1,3,5,10,20,100; with --predictions the script's 1,3,5,10]")
    p.add_argument(
        "--relevance-level",
        type=positive_int,
        help="minimum grade counted relevant by binary measures under trec_eval; an official protocol counts its own "
        "(official:ikat, official:trec-cast: 2; the others: 1) and refuses another [the task card's with --task, else 1]",
    )
    p.add_argument(
        "--metrics",
        help="measures (`mtrbench metrics`): strings like nDCG@10,R@100(rel=2), or family names "
        "expanded over --k; also hole_unjudged (per query), hole_beir (BEIR's global Hole@k) "
        "[ndcg,recall,mrr,map,precision,hit; with --predictions the script's ndcg,recall]",
    )
    p.add_argument(
        "--protocol",
        help="trec_eval, or a benchmark's official conventions: "
        f"{' | '.join(f'official:{name}' for name in OFFICIAL_PROTOCOLS)}, or official with --task (its card's) "
        "(docs/protocols.md) [trec_eval; official:mtrag with --predictions]",
    )


def _add_compare_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "compare",
        help="systems x measures in one table with significance letters (paper-ready: "
        "markdown, latex, csv); two result files alone: every metric, in detail",
        description="Each system gets a letter; a mean carries the letters of the systems it is "
        "significantly better than (Holm within each measure). Two result files and none "
        "of the table options: the detailed two-system comparison of every metric.",
    )
    p.add_argument(
        "systems",
        nargs="+",
        metavar="SYSTEM",
        help="eval result JSONs, score --output JSONs, or TREC runs (with --qrels or --task)",
    )
    _add_compare_table_flags(p)
    _add_compare_trec_run_flags(p)
    p.add_argument("--metrics", help="two-result comparison: metric keys [every per-query metric both have]")
    p.add_argument(
        "--tie-epsilon",
        type=non_negative_float,
        default=None,
        help="two-result comparison: per-query differences within this count as ties [1e-6]",
    )
    p.add_argument(
        "--output", help="write the table here (format from --format or the suffix); two-result comparison: JSON"
    )


def _add_compare_table_flags(p: argparse.ArgumentParser) -> None:
    """The systems x measures table: measures, the significance test and its unit, names and format."""
    p.add_argument("--measures", help="measure strings, e.g. nDCG@10,R@100,MRR@10 [the first result's main score]")
    p.add_argument(
        "--baseline", help="letter, 1-based position or name of the system the others are tested against [the first]"
    )
    p.add_argument("--all-pairs", action="store_true", help="test every pair of systems instead of a baseline")
    p.add_argument(
        "--test",
        choices=["t", "randomization"],
        default=None,
        help="paired t-test or paired randomization (sign-flip) test [t]",
    )
    p.add_argument(
        "--unit",
        choices=["query", "conversation"],
        default=None,
        help="paired unit: each query, or each conversation's mean over its turns [query; a note on stderr says so]",
    )
    p.add_argument(
        "--alpha", type=significance, default=None, help="significance level on Holm-adjusted p-values [0.05]"
    )
    p.add_argument("--names", help="comma list of display names, one per system [model (history), or the file name]")
    p.add_argument(
        "--format",
        choices=["table", "markdown", "latex", "csv", "json"],
        default=None,
        help="output format [table on the terminal; with --output, the file's suffix: .md .tex .csv .json]",
    )


def _add_compare_trec_run_flags(p: argparse.ArgumentParser) -> None:
    """The qrels that score systems given as TREC runs."""
    judged = p.add_mutually_exclusive_group()
    judged.add_argument("--qrels", help="qrels that score TREC-run systems")
    judged.add_argument("--task", help="task whose qrels score TREC-run systems (and give conversations for --unit)")
    p.add_argument("--split", help="with --task: split [the card's eval split]")
    p.add_argument(
        "--relevance-level", type=positive_int, help="with TREC runs: minimum relevant grade [the task's, else 1]"
    )


def _add_pool_parser(sub: Subparsers) -> None:
    p = sub.add_parser("pool", help="pool growth rate and marginal contribution over several runs (DREAM App. H)")
    p.add_argument("runs", nargs="+", help="TREC run files of one task")
    p.add_argument("--qrels", required=True, help="original qrels")
    p.add_argument("--refined-qrels", required=True, help="refined qrels (original + newly found relevant)")
    p.add_argument("--k", type=positive_int, default=10, help="pool depth and metric cutoff [10]")
    p.add_argument("--metric", default="hit", choices=["hit", "ndcg", "recall"])
    p.add_argument("--orders", type=positive_int, default=10, help="random orders averaged [10]")
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--output", help="write the analysis as JSON here")
