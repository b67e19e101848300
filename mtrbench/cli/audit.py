"""`mtrbench audit`: MTR-EVAL audit of a task's gold labels by LLM judges."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from mtrbench.audit.plan import parse_dimensions
from mtrbench.cli.llm_flags import cache_from_args, check_failure_rates, judges_from_args
from mtrbench.infra.atomic import check_folder_target
from mtrbench.infra.errors import MtrbenchError
from mtrbench.retrieve import ResolvedModel, resolve
from mtrbench.serialize.history import get_strategy

if TYPE_CHECKING:
    from rich.console import Console

    from mtrbench.audit.mtr_eval import AuditOutcome


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
