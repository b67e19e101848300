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
from mtrbench.retrieve import ResolvedModel, RetrieverOptions, resolve
from mtrbench.serialize.history import get_strategy

if TYPE_CHECKING:
    from rich.console import Console

    from mtrbench.generation.model_history import RewriterOptions
    from mtrbench.llm.config import JudgeConfig
    from mtrbench.pipeline.evaluate import EvalConfig
    from mtrbench.pipeline.rag import RagConfig, RagReport


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
    model = resolve(args.model)
    if args.max_length is not None and model.spec is not None and model.spec.kind == "sparse":
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
    if args.dry_run:
        return 0
    _print_report(Console(), report, quiet=args.quiet)
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


def _print_report(console, report, quiet: bool) -> None:
    from mtrbench.results.table import compact_table, print_titled  # deferred: loads pytrec_eval

    retrieval, generated = report.retrieval, report.generation
    main = retrieval.main_score_key
    per_query = retrieval.per_query_values()
    scores, outcome = report.scores, report.outcome
    labels = scores.evaluation.labels() if scores is not None else {}
    keys = list(scores.evaluation.metric_keys) if scores is not None else []
    judged = {t.item.qid: t for t in outcome.run.turns} if outcome is not None else {}
    if not quiet:
        table = compact_table()
        for column in ["qid", main, *(labels[k] for k in keys), *(["judge"] if outcome is not None else [])]:
            table.add_column(column, justify="left" if column == "qid" else "right", no_wrap=column == "qid")
        qids = list(dict.fromkeys([*(scores.scored if scores is not None else []), *judged]))
        for qid in qids:
            row = [qid, f"{per_query[qid][main]:.4f}" if qid in per_query else "-"]
            if scores is not None:
                values = scores.evaluation.per_query.get(qid, {})
                row += [f"{values[k]:.4f}" if k in values else "-" for k in keys]
            if outcome is not None:
                turn = judged.get(qid)
                row.append(
                    "-"
                    if turn is None
                    else "failed"
                    if not turn.ok
                    else f"{turn.value:g}"
                    if outcome.run.mode == "rating"
                    else "correct"
                    if turn.value
                    else "incorrect"
                )
            table.add_row(*row)
        print_titled(console, f"{report.task.name} · per turn", table)
    console.print(
        f"retrieval {report.retrieval.history}: {main} {retrieval.scores.get(main, float('nan')):.4f} "
        f"over {retrieval.n_evaluated} turns",
        soft_wrap=True,
    )
    console.print(
        f"generation: {generated.generated} generated this run, {generated.done_before} already there, "
        f"{generated.failed} failed of {generated.turns}; {generated.requests} request(s) sent",
        soft_wrap=True,
    )
    if scores is not None:
        means = "  ".join(f"{labels[k]} {v:.4f}" for k, v in scores.means().items())
        console.print(f"{len(scores.scored)} turns scored: {means}", soft_wrap=True)
    if outcome is not None:
        s = outcome.summary
        line = f"judge {s['judge']['model']} ({s['mode']}): {s['counts']['answered']} answered"
        if s.get("accuracy") is not None:
            line += f", correct {s['accuracy']:.3f}"
        if s.get("mean_rating") is not None:
            line += f", mean rating {s['mean_rating']:.3f}"
        if outcome.failures:
            line += f"; {len(outcome.failures)} failed after retries (not scored; asked again next run)"
        console.print(line, soft_wrap=True)
    _print_nuggets_and_alignment(console, report)
    if generated.mtrag_output is not None:
        console.print(
            f"MTRAGEval predictions (rag_taskc): {generated.mtrag_output} ({generated.mtrag_predictions} tasks)",
            soft_wrap=True,
        )
    if generated.failed:
        console.print(
            f"[yellow]warning:[/yellow] {generated.failed} turn(s) not generated: {generated.failures_path}",
            soft_wrap=True,
        )
    console.print(f"[dim]results: {report.output}[/dim]", soft_wrap=True)


def _print_nuggets_and_alignment(console: Console, report: RagReport) -> None:
    if report.nuggets is not None:
        means = report.nuggets.scores[0].scores
        shown = "  ".join(f"{name} {means[name]:.4f}" for name in ("strict_vital", "vital", "strict_all", "all"))
        console.print(f"nuggets over {means['n']} answers: {shown}", soft_wrap=True)
    for key, result in (report.alignment or {}).items():
        if result["value"] is None:
            console.print(f"[yellow]warning:[/yellow] {key}: {result['note']}", soft_wrap=True)
        else:
            p = f", p={result['p_value']:.3g}" if result.get("p_value") is not None else ""
            console.print(
                f"{key} (of {result['metric']}): {result['value']:.4f} on {result['n']} turns{p}", soft_wrap=True
            )
