"""`mtrbench judge mtrag PREDICTIONS`: MTRAG's generation metrics (MTRAGEval Tasks B and C), and its format check."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mtrbench.cli.llm_flags import cache_from_args, check_failure_rates, judges_from_args
from mtrbench.formats.mtrag_eval import check_predictions
from mtrbench.infra.errors import DataError, MtrbenchError
from mtrbench.judge.mtrag.bertscore import BertScoreOptions
from mtrbench.judge.mtrag.run import MtragJudgeOptions, judge_mtrag, parse_metric_list
from mtrbench.llm.failure_rate import JudgeFailures, most_common


def run(args: argparse.Namespace) -> int:
    if args.check_format:
        return _check_format(args)
    if args.input_file:
        raise MtrbenchError("--input-file applies to --check-format")
    from rich.console import Console

    with_judge = bool(args.llm_model or args.judges)
    judges = tuple(judges_from_args(args)) if with_judge else ()
    if args.bertscore_batch_size < 1:
        raise MtrbenchError("--bertscore-batch-size must be at least 1")
    output_dir = Path(args.output_dir) if args.output_dir else Path("results/judge/mtrag") / Path(args.predictions).stem
    options = MtragJudgeOptions(
        output_dir=output_dir,
        metrics=parse_metric_list(args.metrics, with_judge),
        judges=judges,
        bertscore=BertScoreOptions(
            model=args.bertscore_model,
            num_layers=args.bertscore_layers,
            rescale=not args.bertscore_no_rescale,
            baseline_path=args.bertscore_baseline,
            batch_size=args.bertscore_batch_size,
            device=args.device,
        ),
        dry_run=args.dry_run,
        yes=args.yes,
        show_progress=not args.quiet,
        human_labels=args.human_labels,
        human_metric=args.human_metric,
    )
    outcome = judge_mtrag(
        args.predictions, options, cache=None if args.dry_run or not with_judge else cache_from_args(args)
    )
    if outcome is None:
        return 0
    _print_summary(Console(), outcome.summary)
    print(f"metrics: {outcome.metrics_path}\nsummary: {outcome.summary_path}")
    counts = []
    if outcome.llm is not None:
        for judge in judges:
            reasons = [reason for _, reason in outcome.llm.failures.get(judge.name, [])]
            counts.append(
                JudgeFailures(
                    judge.name,
                    outcome.llm.unanswered.get(judge.name, 0),
                    outcome.llm.asked.get(judge.name, 0),
                    most_common(reasons),
                )
            )
    return check_failure_rates(args, counts)


def _print_summary(console, summary: dict) -> None:
    from rich.table import Table

    means: dict[str, dict[str, float]] = summary["means"]  # type: ignore[assignment]
    groups = [g for g in means if g != "all"] + (["all"] if "all" in means else [])
    names = sorted({n for by_name in means.values() for n in by_name})
    counts: dict[str, int] = summary["per_class_instances"]  # type: ignore[assignment]
    table = Table(title="MTRAG generation metrics (mean per answerability class)")
    table.add_column("metric")
    for group in groups:
        table.add_column(f"{group} ({counts.get(group, summary['instances'])})", justify="right")
    for name in names:
        table.add_row(name, *(f"{means[g][name]:.4f}" if name in means[g] else "-" for g in groups))
    console.print(table)
    for label, value in summary["harmonic_means"].items():  # type: ignore[union-attr]
        console.print(f"{label} = {value:.4f}", soft_wrap=True)
    ppi = summary.get("judge_ppi")
    if isinstance(ppi, dict):
        console.print(
            f"{ppi['metric']} with {ppi['labelled']} human labels (PPI, 95%): judge alone {ppi['llm_mean']:.4f} over "
            f"{ppi['items']} tasks; PPI {ppi['ppi_mean']:.4f} [{ppi['ppi_low']:.4f}, {ppi['ppi_high']:.4f}]; "
            f"humans alone {ppi['human_mean']:.4f} [{ppi['human_low']:.4f}, {ppi['human_high']:.4f}]",
            soft_wrap=True,
        )


def _check_format(args: argparse.Namespace) -> int:
    if args.input_file and not Path(args.input_file).is_file():
        raise DataError(f"input file {args.input_file} does not exist")
    report = check_predictions(args.predictions, args.check_format, args.input_file)
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for problem in report.problems:
        print(f"error: {problem}", file=sys.stderr)
    if report.problems:
        return 2
    print(f"{args.predictions}: valid for MTRAGEval {args.check_format}")
    return 0
