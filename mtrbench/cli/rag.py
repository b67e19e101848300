"""`mtrbench rag`: eval -> generate -> judge -> RAGAlign in one command."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from mtrbench.cli.llm_flags import (
    cache_from_args,
    model_judge,
    rewriter_from_args,
    sampling_overrides,
)
from mtrbench.generation.runner import GenerateConfig, generation_history, generation_strategy
from mtrbench.infra.atomic import check_file_target, check_folder_target
from mtrbench.infra.errors import MtrbenchError, UserInputError
from mtrbench.pipeline.rag_summary import print_rag_report
from mtrbench.retrieve import ResolvedModel, RetrieverOptions, resolve
from mtrbench.serialize.history import get_strategy

if TYPE_CHECKING:
    from rich.console import Console

    from mtrbench.generation.model_history import RewriterOptions
    from mtrbench.llm.config import JudgeConfig
    from mtrbench.pipeline.evaluate import EvalConfig
    from mtrbench.pipeline.rag import RagConfig


def _check_names(args: argparse.Namespace) -> ResolvedModel:
    """Typos in the retriever's name and its history, and output paths that cannot be written, with the light
    parsers alone: before the pipeline (torch, the LLM client) is imported and before any endpoint is asked. Returns
    the retriever's model, resolved once for the run."""
    if "," in args.history or args.history == "all":
        raise MtrbenchError("rag takes one --history strategy")
    check_folder_target(args.output_dir)  # a file in the way: one line before the pipeline loads
    if args.mtrag_out:
        check_file_target(args.mtrag_out)
    get_strategy(args.history)
    model = resolve(args.model, args.model_kind)
    if args.max_length is not None and model.spec is not None and model.spec.kind == "lexical":
        raise UserInputError(f"--max-length applies to encoder models; {args.model} is BM25, which would ignore it")
    return model


def _cmd_rag(args: argparse.Namespace) -> int:
    model = _check_names(args)
    from rich.console import Console

    from mtrbench.pipeline.rag import run_rag  # deferred: loads torch

    answer_history = generation_history(args.answer_history)  # an old name ("raw") is read as its current one
    generator = _generator(args)
    status = Console(stderr=True)
    judge = _judge(args, status)
    if generation_strategy(answer_history).needs_rewriter and not args.rewriter_model:
        args.rewriter_model, args.rewriter_base_url = args.generator_model, args.generator_base_url
    config = _rag_config(args, model, answer_history, generator, judge, rewriter_from_args(args, not args.quiet))
    say = (lambda m: None) if args.quiet else (lambda m: status.print(f"[dim]{m}[/dim]", soft_wrap=True))
    report = run_rag(config, progress=say)
    if args.dry_run or report is None:  # a dry run sends nothing and reports nothing
        return 0
    print_rag_report(Console(), report, quiet=args.quiet)
    return 0  # failures within --max-failure-rate are warnings; past it run_rag raised TooManyFailures


def _generator(args: argparse.Namespace) -> JudgeConfig:
    judge = model_judge(args.generator_model, args.generator_base_url, args, "generator")
    return sampling_overrides(dataclasses.replace(judge, max_tokens=args.max_tokens), args.temperature, args.seed)


def _judge(args: argparse.Namespace, status: Console) -> JudgeConfig | None:
    """The judge of the answers (the generator itself, with a note, unless --judge-model names another)."""
    if args.judge == "none":
        return None
    if not args.judge_model:
        status.print(
            "[yellow]note:[/yellow] the generator judges its own answers; pass --judge-model for an independent judge",
            soft_wrap=True,
        )
    judge = model_judge(
        args.judge_model or args.generator_model, args.judge_base_url or args.generator_base_url, args, "judge"
    )
    if args.judge_max_tokens is not None:
        judge = dataclasses.replace(judge, max_tokens=args.judge_max_tokens)
    return judge


def _rag_config(
    args: argparse.Namespace,
    model: ResolvedModel,
    answer_history: str,
    generator: JudgeConfig,
    judge: JudgeConfig | None,
    rewriter: RewriterOptions | None,
) -> RagConfig:
    from mtrbench.pipeline.rag import RagConfig  # deferred: loads torch

    return RagConfig(
        model=model,
        task=args.task,
        eval=_retrieval_config(args, rewriter),
        retriever=_retriever_options(args),
        generation=_generation_config(args, answer_history, rewriter),
        generator=generator,
        judge=judge,
        judge_mode=args.judge if judge else "verdict",
        scenario=args.scenario,
        measures=tuple(m.strip() for m in args.measures.split(",") if m.strip()),
        ragalign=tuple(m.strip() for m in args.ragalign.split(",") if m.strip()),
        cache=None if args.dry_run else cache_from_args(args),
        dry_run=args.dry_run,
        yes=args.yes,
        show_progress=not args.quiet,
        max_failure_rate=args.max_failure_rate,
        nuggets=args.nuggets,
    )


def _retrieval_config(args: argparse.Namespace, rewriter: RewriterOptions | None) -> EvalConfig:
    from mtrbench.pipeline.evaluate import EvalConfig, command_line  # deferred: loads torch

    return EvalConfig(
        histories=[args.history],
        truncate=args.truncate,
        split=args.split,
        data_dir=args.data_dir,
        corpus_path=args.corpus,
        output_dir=Path(args.output_dir),
        command=command_line(args.argv),
        limit=args.limit,
        rewriter=rewriter,
    )


def _retriever_options(args: argparse.Namespace) -> RetrieverOptions:
    return RetrieverOptions.of(
        device=args.device,
        max_length=args.max_length,
        cache_dir=args.cache_dir,
        use_cache=not args.no_cache,
        show_progress=not args.quiet,
        alpha=args.alpha,
        candidate_k=args.candidate_k,
        chunking=args.chunking,
        rank_parents=args.rank_parents,
    )


def _generation_config(
    args: argparse.Namespace, answer_history: str, rewriter: RewriterOptions | None
) -> GenerateConfig:
    return GenerateConfig(
        task=args.task,
        top_k=args.passages,
        history=answer_history,
        max_passage_chars=args.max_passage_chars or None,
        limit=args.limit,
        rewriter=rewriter,
        mtrag_output=Path(args.mtrag_out) if args.mtrag_out else None,
    )
