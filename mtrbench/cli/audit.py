"""`mtrbench audit`: MTR-EVAL audit of a task's gold labels by LLM judges."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from mtrbench.audit.defaults import DEFAULT_MAX_DOC_CHARS, DEFAULT_NEGATIVES, DIMENSIONS
from mtrbench.audit.plan import parse_dimensions
from mtrbench.cli.common import Handler, Subparsers
from mtrbench.cli.flag_types import conversation_limit, non_negative_int, positive_int, seed
from mtrbench.cli.llm_flags import add_llm_arguments, cache_from_args, check_failure_rates, judges_from_args
from mtrbench.infra.atomic import check_folder_target
from mtrbench.infra.errors import MtrbenchError
from mtrbench.retrieve import ResolvedModel, resolve
from mtrbench.serialize.history import get_strategy

if TYPE_CHECKING:
    from rich.console import Console

    from mtrbench.audit.mtr_eval import AuditOutcome


def register(sub: Subparsers) -> dict[str, Handler]:
    p = sub.add_parser(
        "audit",
        help="MTR-EVAL: audit a task's gold labels with LLM judges",
        description="MTR-EVAL (MTR-SUITE §3): rate query-evidence alignment, evidence completeness "
        "(discriminability test against hard negatives), answer faithfulness and answer "
        "quality with one or more LLM judges. Resumable: a re-run asks only what the "
        "log in --output-dir has not answered.",
    )
    p.add_argument("task", help="task name (`mtrbench tasks`), card YAML or data folder")
    p.add_argument("--split", help="split [the card's eval split]")
    p.add_argument("--data-dir", help="local copy of the task's data, laid out as published")
    p.add_argument("--corpus", help="external corpus, for tasks that do not ship one")
    p.add_argument("--dimensions", help=f"comma list of {','.join(DIMENSIONS)} [all the task's data supports]")
    p.add_argument(
        "--negatives",
        type=positive_int,
        default=DEFAULT_NEGATIVES,
        help=f"hard negatives shown beside the gold document (completeness) [{DEFAULT_NEGATIVES}]",
    )
    p.add_argument(
        "--negatives-model",
        default="bm25",
        help="retriever for hard negatives: any `mtrbench models` alias, HF id or folder [bm25]",
    )
    p.add_argument("--negatives-run", help="take hard negatives from this TREC run instead (top-ranked non-gold)")
    p.add_argument(
        "--negatives-history",
        default="full",
        help="history strategy for the negatives retriever's queries (see `mtrbench eval`) [full]",
    )
    p.add_argument("--device", default="auto", help="device of a dense negatives retriever [auto]")
    p.add_argument("--seed", type=seed, default=0, help="query sample and candidate order seed [0]")
    p.add_argument(
        "--limit",
        type=conversation_limit,
        metavar="N",
        help="only the first N conversations (file order), as eval [all]",
    )
    p.add_argument(
        "--sample", type=positive_int, metavar="N", help="audit a seeded sample (--seed) of N queries with gold [all]"
    )
    p.add_argument(
        "--max-doc-chars",
        type=non_negative_int,
        default=DEFAULT_MAX_DOC_CHARS,
        help=f"cut each document shown to a judge to this many characters, 0 = never [{DEFAULT_MAX_DOC_CHARS}]",
    )
    p.add_argument("--output-dir", help="where the log and results go [results/audit/<task>]")
    p.add_argument(
        "--human-scores",
        help="JSONL/CSV of human scores per instance: Pearson r per dimension and judge (format in the README)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    add_llm_arguments(p)
    return {"audit": _cmd_audit}


def _check_names(args: argparse.Namespace) -> str | ResolvedModel:
    """The negatives retriever's name and history, checked before the task loads (run_audit builds that retriever
    only after loading it). Returns its model, resolved once for the run (the name as given, unused, when
    --negatives-run replaces it)."""
    if args.negatives_run:
        if args.negatives_model != "bm25":
            raise MtrbenchError("--negatives-run and --negatives-model exclude each other")
        return args.negatives_model
    get_strategy(args.negatives_history)
    return resolve(args.negatives_model)


def _cmd_audit(args: argparse.Namespace) -> int:
    negatives_model = _check_names(args)
    if args.output_dir:
        check_folder_target(args.output_dir)  # a file in the way: one line before the task loads
    from rich.console import Console

    from mtrbench.audit.mtr_eval import AuditConfig, run_audit  # deferred: loads pytrec_eval

    config = AuditConfig(
        task=args.task,
        split=args.split,
        data_dir=args.data_dir,
        corpus_path=args.corpus,
        dimensions=parse_dimensions(args.dimensions),
        n_negatives=args.negatives,
        negatives_model=negatives_model,
        negatives_run=args.negatives_run,
        negatives_history=args.negatives_history,
        device=args.device,
        seed=args.seed,
        limit=args.limit,
        sample=args.sample,
        max_doc_chars=args.max_doc_chars or None,
        output_dir=Path(args.output_dir) if args.output_dir else None,
        human_scores=args.human_scores,
        dry_run=args.dry_run,
        yes=args.yes,
        show_progress=not args.quiet,
    )
    judges = judges_from_args(args)
    console = Console()
    outcome = run_audit(
        config,
        judges,
        cache=None if args.dry_run else cache_from_args(args),
        say=lambda message: console.print(f"[dim]{message}[/dim]"),
    )
    _show(outcome, console)
    if outcome.dry_run:
        return 0
    return check_failure_rates(args, outcome.failures)


def _show(outcome: AuditOutcome, console: Console) -> None:
    """The results table (not after a dry run), the notes, and where the files are."""
    from mtrbench.audit.report import TABLE_LEGEND, results_table  # deferred: loads pytrec_eval
    from mtrbench.results.table import print_titled  # deferred: loads pytrec_eval

    if not outcome.dry_run:
        print_titled(console, f"{outcome.title}\n{TABLE_LEGEND}", results_table(outcome.stats, outcome.correlation))
    for note, count in outcome.notes.items():
        console.print(f"[yellow]note:[/yellow] {count} {note}", soft_wrap=True)
    if outcome.dry_run:
        return
    console.print(
        f"[dim]{len(outcome.holes)} completeness pick(s) on non-gold documents -> {outcome.holes_qrels_path}[/dim]",
        soft_wrap=True,
    )
    console.print(f"[dim]results: {outcome.summary_path}, per-reply log {outcome.log_path}[/dim]", soft_wrap=True)
