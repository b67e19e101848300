"""`mtrbench generate`: answers with citations per turn, from a retrieval result or the gold passages."""

from __future__ import annotations

import argparse
from pathlib import Path

from mtrbench.cli.llm_flags import (
    cache_from_args,
    model_judge,
    rewriter_from_args,
    sampling_overrides,
)
from mtrbench.data import load_task, resolve_card
from mtrbench.formats.generations import read_generations
from mtrbench.generation.runner import GenerateConfig, generation_failures, generation_strategy, run_generate
from mtrbench.generation.sources import load_run
from mtrbench.infra.atomic import check_file_target
from mtrbench.infra.errors import MtrbenchError
from mtrbench.llm.failure_rate import raise_if_over
from mtrbench.results.ikat_out import write_generation_ikat_out


def _cmd_generate(args: argparse.Namespace) -> int:
    import dataclasses

    for path in (args.output, args.mtrag_out):  # a folder or a file in the way fails before the task loads
        if path:
            check_file_target(path)
    _check_ikat_out(args)
    generator = sampling_overrides(
        dataclasses.replace(
            model_judge(args.generator_model, args.generator_base_url, args, "generator"), max_tokens=args.max_tokens
        ),
        args.temperature,
        args.seed,
    )
    strategy = generation_strategy(args.history)  # an old name ("raw", "summary") is read as its current one
    if strategy.needs_rewriter and not args.rewriter_model:
        # the generator writes its own rewrites/summaries unless another model is named
        args.rewriter_model, args.rewriter_base_url = args.generator_model, args.generator_base_url
    config = GenerateConfig(
        task=args.task,
        run_path=Path(args.run) if args.run else None,
        oracle=args.oracle,
        top_k=args.top_k,
        history=strategy.name,
        output=Path(args.output) if args.output else None,
        split=args.split,
        data_dir=args.data_dir,
        corpus_path=args.corpus,
        max_passage_chars=args.max_passage_chars or None,
        limit=args.limit,
        dry_run=args.dry_run,
        yes=args.yes,
        show_progress=not args.quiet,
        rewriter=rewriter_from_args(args, not args.quiet),
        mtrag_output=Path(args.mtrag_out) if args.mtrag_out else None,
    )
    cache = None if args.dry_run else cache_from_args(args)
    report = run_generate(config, generator, cache)
    if args.dry_run:
        return 0
    print(
        f"generations: {report.output} ({report.done_before} turns already there, {report.generated} generated, "
        f"{report.failed} failed of {report.turns})"
    )
    print(f"requests sent: {report.requests}, served from cache: {report.cached}")
    if args.ikat_out:
        _write_ikat_out(args, report.output)
    if report.mtrag_output is not None:
        mode = "generation_taskb" if args.oracle else "rag_taskc"
        print(f"MTRAGEval predictions ({mode}): {report.mtrag_output} ({report.mtrag_predictions} tasks)")
    for reason, count in sorted(report.skipped.items()):
        print(f"warning: {count} {reason}")
    if report.torn_lines:
        print(f"warning: {report.torn_lines} unreadable line(s) in {report.output} ignored (a run killed mid-write)")
    if report.duplicates:
        print(f"warning: {report.duplicates} duplicate turn(s) in {report.output} ignored")
    if report.rewriter and report.rewriter.get("failures"):
        print(
            f"warning: {report.rewriter['failures']} {report.rewriter['kind']}(s) failed; those turns are not "
            "generated (asked again on the next run)"
        )
    if report.failed:
        print(f"failed turns (asked again on the next run): {report.failures_path}")
    raise_if_over(
        [generation_failures(report, generator.model)],
        args.max_failure_rate,
        f"answers written to {report.output}, failed turns listed in {report.failures_path}",
    )
    return 0


def _write_ikat_out(args: argparse.Namespace, generations_path: Path) -> None:
    """The answers of generations_path as a TREC iKAT run (docs/ikat.md)."""
    card = resolve_card(args.task)
    task = load_task(card, split=args.split, data_dir=args.data_dir, corpus_path=args.corpus)
    run = load_run(args.run)[1] if args.run else None
    passage_db = Path(args.passage_db) if args.passage_db else None
    checks = write_generation_ikat_out(
        Path(args.ikat_out), card, task, run, read_generations(generations_path), passage_db
    )
    print(
        f"TREC iKAT run: {args.ikat_out} ({len(task.queries)} turns; structural checks passed, "
        f"{len(checks.warnings)} warnings" + (f", first: {checks.warnings[0]}" if checks.warnings else "") + ")"
    )


def _check_ikat_out(args: argparse.Namespace) -> None:
    if args.passage_db and not args.ikat_out:
        raise MtrbenchError("--passage-db checks the --ikat-out file: give --ikat-out too")
    if args.ikat_out and resolve_card(args.task).format != "ikat":
        raise MtrbenchError(f"--ikat-out writes a TREC iKAT run: task '{args.task}' is not ikat-2023/2024/2025")
