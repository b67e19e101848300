"""`mtrbench generate`: answers with citations per turn, from a retrieval result or the gold passages."""

from __future__ import annotations

import argparse
from pathlib import Path

from mtrbench.cli.common import Handler, Subparsers
from mtrbench.cli.flag_types import conversation_limit, non_negative_int, positive_int
from mtrbench.cli.llm_flags import (
    add_max_failure_rate,
    add_rewriter_arguments,
    add_run_flags,
    add_sampling_flags,
    cache_from_args,
    model_judge,
    rewriter_from_args,
    sampling_overrides,
)
from mtrbench.data import load_task, resolve_card
from mtrbench.formats.generations import read_generations
from mtrbench.generation.defaults import DEFAULT_HISTORY, DEFAULT_TOP_K
from mtrbench.generation.runner import GenerateConfig, generation_failures, generation_strategy, run_generate
from mtrbench.generation.sources import load_run
from mtrbench.infra.atomic import check_file_target
from mtrbench.infra.errors import MtrbenchError
from mtrbench.llm.failure_rate import raise_if_over
from mtrbench.results.ikat_out import write_generation_ikat_out


def register(sub: Subparsers) -> dict[str, Handler]:
    p = sub.add_parser(
        "generate",
        help="conversational RAG: answer each turn with citations [n]",
        description="For each turn, prompt a generator with the chosen compression of the history "
        "and the top-k passages of a retrieval result (or the gold passages, --oracle); "
        "writes generations.jsonl beside the result, one record per turn, appended as "
        "turns finish. Resumable: a rerun asks only for turns not in the file.",
    )
    p.add_argument("--task", default="mtrbench-sample", help="task name, card YAML or data folder [mtrbench-sample]")
    p.add_argument("--split", help="split [the card's eval split]")
    p.add_argument("--data-dir", help="local copy of the task's data, laid out as published")
    p.add_argument("--corpus", help="external corpus, for tasks that do not ship one")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--run",
        metavar="PATH",
        help="retrieval result: a TREC run file, an eval result .json, or a folder with one *.run.trec",
    )
    source.add_argument("--oracle", action="store_true", help="the gold passages (qrels grade > 0) instead of a run")
    p.add_argument("--top-k", type=positive_int, default=DEFAULT_TOP_K, help=f"passages per prompt [{DEFAULT_TOP_K}]")
    p.add_argument(
        "--history",
        default=DEFAULT_HISTORY,
        metavar="NAME",
        help="eval's --history names: full: whole history; last-response: earlier questions + last "
        "response (CORAL); rewrite: the task's gold rewrite; rewrite:llm: a rewriter model's; "
        f"summary:llm: a model's summary of the history, then the question [{DEFAULT_HISTORY}]",
    )
    _add_output_flags(p)
    p.add_argument(
        "--max-passage-chars",
        type=non_negative_int,
        default=0,
        help="cut each passage shown to the generator to this many characters, 0 = whole [0]",
    )
    p.add_argument("--max-tokens", type=positive_int, default=512, help="answer length limit in tokens [512]")
    add_sampling_flags(p, "generator")
    p.add_argument(
        "--limit",
        type=conversation_limit,
        metavar="N",
        help="only the first N conversations (file order), as eval (a smoke run)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    group = p.add_argument_group("generator model")
    group.add_argument(
        "--model",
        dest="generator_model",
        required=True,
        metavar="MODEL",
        help="generator model id on the server (with hf://: any name for the records)",
    )
    group.add_argument(
        "--base-url",
        dest="generator_base_url",
        metavar="URL",
        help="OpenAI-compatible endpoint, or hf://MODEL_OR_PATH to run a transformers chat model "
        "in-process [env OPENAI_BASE_URL, else https://api.openai.com/v1]",
    )
    add_run_flags(group)
    add_max_failure_rate(
        group,
        "more than this share of the turns asked failed (HTTP error, timeout, unusable "
        "reply, a failed rewrite); answers are written either way, failed turns listed",
    )
    add_rewriter_arguments(p, with_run_flags=False)
    return {"generate": _cmd_generate}


def _add_output_flags(p: argparse.ArgumentParser) -> None:
    """Where the answers go: the generations file, and an MTRAGEval or TREC iKAT run file beside it."""
    p.add_argument(
        "--output",
        help="generations JSONL [<task>.<generator>.<history>.generations.jsonl beside the run; in "
        "results/generations/<task>/oracle/ with --oracle]",
    )
    p.add_argument(
        "--mtrag-out",
        metavar="FILE.jsonl",
        help="also write the answers as an MTRAGEval prediction file, checked with MTRAG's format rules: "
        "Task B (generation_taskb) with --oracle (an MTRAG-UN card's reference passages), Task C "
        "(rag_taskc) with --run; contexts = the passages shown. Score it with `mtrbench judge mtrag`",
    )
    p.add_argument(
        "--ikat-out",
        metavar="FILE",
        help="also write the answers as a TREC iKAT run file (the official JSON of an ikat-* card's year; 2025: "
        "JSON lines): each turn's answer as the response text, the run's top 1000 passages (--oracle: the "
        "passages shown), those shown to the generator marked used; checked with the organisers' structural "
        "checks (docs/ikat.md)",
    )
    p.add_argument(
        "--passage-db",
        metavar="DB",
        help="with --ikat-out: the organisers' passage-id database (sqlite) to check the passage ids against",
    )


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
