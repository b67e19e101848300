"""`mtrbench rag`: eval -> generate -> judge -> RAGAlign in one command."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from mtrbench.cli.common import Handler, Subparsers, add_data_options
from mtrbench.cli.flag_types import chunking_spec, conversation_limit, non_negative_int, positive_int, share
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
from mtrbench.generation.defaults import DEFAULT_TOP_K, GENERATION_HISTORIES
from mtrbench.generation.runner import GenerateConfig, generation_history, generation_strategy
from mtrbench.infra.atomic import check_file_target, check_folder_target
from mtrbench.infra.errors import MtrbenchError, UserInputError
from mtrbench.judge.defaults import DEFAULT_MEASURES, DEFAULT_RAGALIGN
from mtrbench.retrieve import ResolvedModel, RetrieverOptions, resolve
from mtrbench.serialize.history import DEFAULT_HISTORY, get_strategy

if TYPE_CHECKING:
    from rich.console import Console

    from mtrbench.generation.model_history import RewriterOptions
    from mtrbench.llm.config import JudgeConfig
    from mtrbench.pipeline.evaluate import EvalConfig
    from mtrbench.pipeline.rag import RagConfig, RagReport


def register(sub: Subparsers) -> dict[str, Handler]:
    p = sub.add_parser(
        "rag",
        help="conversational RAG end to end: retrieve, generate, judge, RAGAlign",
        description="Retrieve with --model (as `mtrbench eval`), answer each turn from the top "
        "--passages of that result with --generator-model (as `mtrbench generate`), "
        "score the answers (reference measures; an LLM judge's verdicts or 1-10 ratings) "
        "and relate them to retrieval (RAGAlign). Every file lands beside the retrieval "
        "result; a rerun asks only for the turns not yet generated or judged.",
    )
    # The order of these calls is the order of `mtrbench rag --help` and its usage line.
    _add_retriever_flags(p)
    p.add_argument(
        "--output-dir", default="results", help="where the retrieval result and everything beside it go [results]"
    )
    p.add_argument("--quiet", action="store_true", help="no progress output")
    _add_retrieval_settings_group(p)
    _add_generation_group(p)
    _add_judging_group(p)
    _add_llm_requests_group(p)
    add_rewriter_arguments(p, with_run_flags=False)
    return {"rag": _cmd_rag}


def _add_retriever_flags(p: argparse.ArgumentParser) -> None:
    """The retriever, the task and how the retrieval queries are built, as `mtrbench eval` takes them."""
    p.add_argument("--model", default="minilm", help="retriever: alias, HF id or local folder, or bm25 [minilm]")
    p.add_argument("--task", default="mtrbench-sample", help="task name, card YAML or data folder [mtrbench-sample]")
    add_data_options(p)
    p.add_argument(
        "--history",
        default="full",
        help="retrieval history strategy, one of eval's (rewrite:llm/summary:llm need --rewriter-model) [full]",
    )
    p.add_argument("--truncate", default="left", choices=["left", "right", "none"], help="as in eval [left]")
    p.add_argument("--device", default="auto", help="retriever device: auto | cpu | cuda | cuda:N [auto]")
    p.add_argument("--max-length", type=positive_int, help="retriever token limit [model's]")
    p.add_argument("--cache-dir", help="corpus embedding cache [as eval]")
    p.add_argument("--no-cache", action="store_true", help="encode the corpus without the embedding cache")


def _add_retrieval_settings_group(p: argparse.ArgumentParser) -> None:
    """Hybrid and parent-child retrieval settings, as eval's flags of the same names."""
    parents = p.add_argument_group("retrieval settings (as eval)")
    parents.add_argument(
        "--alpha", type=share, help="hybrid:DENSE+bm25 only: dense share of the min-max normalized scores [0.7]"
    )
    parents.add_argument(
        "--candidate-k",
        type=positive_int,
        help="hybrid, or children with --chunking: retrieved per query [max(top-k, 100)]",
    )
    parents.add_argument(
        "--chunking",
        type=chunking_spec,
        help="parent-child retrieval: children of sentences:SIZE:STRIDE (H-RAG: "
        "sentences:3:2), parents scored by their best child; the generator "
        "is shown the parents",
    )
    parents.add_argument(
        "--rank-parents",
        action="store_true",
        help="with --chunking: rescore the candidate parents on their own text with the same model",
    )


def _add_generation_group(p: argparse.ArgumentParser) -> None:
    """The generator, what it is shown of the retrieval result and of the conversation, and its output files."""
    gen = p.add_argument_group("generation")
    gen.add_argument("--generator-model", required=True, metavar="MODEL", help="generator model id on the server")
    gen.add_argument(
        "--generator-base-url",
        metavar="URL",
        help="OpenAI-compatible endpoint, or hf://MODEL_OR_PATH [env OPENAI_BASE_URL, else OpenAI's]",
    )
    gen.add_argument(
        "--passages",
        type=positive_int,
        default=DEFAULT_TOP_K,
        help=f"top passages of the retrieval result shown per turn [{DEFAULT_TOP_K}]",
    )
    gen.add_argument(
        "--answer-history",
        default=DEFAULT_HISTORY,
        metavar="NAME",
        help=f"history the generator sees, as generate --history: {', '.join(GENERATION_HISTORIES)} "
        f"[{DEFAULT_HISTORY}]",
    )
    gen.add_argument(
        "--max-passage-chars", type=non_negative_int, default=0, help="cut each passage shown, 0 = whole [0]"
    )
    gen.add_argument("--max-tokens", type=positive_int, default=512, help="answer length limit in tokens [512]")
    add_sampling_flags(gen, "generator")
    gen.add_argument(
        "--mtrag-out",
        metavar="FILE.jsonl",
        help="also write the answers as an MTRAGEval Task C prediction file (rag_taskc: contexts = the "
        "passages shown), checked with MTRAG's format rules; score it with `mtrbench judge mtrag`",
    )
    gen.add_argument(
        "--limit",
        type=conversation_limit,
        metavar="N",
        help="only the first N conversations (file order): retrieval and generation, as eval [all]",
    )


def _add_judging_group(p: argparse.ArgumentParser) -> None:
    """Reference measures, the LLM judge and RAGAlign over its verdicts."""
    judging = p.add_argument_group("judging")
    judging.add_argument(
        "--measures",
        default=",".join(DEFAULT_MEASURES),
        help=f"reference measures, comma list ('' for none) [{','.join(DEFAULT_MEASURES)}]",
    )
    judging.add_argument(
        "--judge",
        default="verdict",
        choices=["verdict", "rating", "none"],
        help="LLM judge: correct/incorrect verdicts (feed RAGAlign), RAD-Bench 1-10 ratings, or none [verdict]",
    )
    judging.add_argument("--judge-model", metavar="MODEL", help="judge model id [the generator model, with a note]")
    judging.add_argument("--judge-base-url", metavar="URL", help="judge endpoint [--generator-base-url]")
    judging.add_argument(
        "--judge-max-tokens",
        type=positive_int,
        metavar="N",
        help="judge reply length limit in tokens (a verdict or rating needs few) [1024]",
    )
    judging.add_argument(
        "--scenario", default="RR", choices=["RS", "RR", "TR"], help="RAD-Bench prompt family for --judge rating [RR]"
    )
    judging.add_argument(
        "--ragalign",
        default=",".join(DEFAULT_RAGALIGN),
        help=f"RAGAlign measures over the verdicts ('' for none) [{','.join(DEFAULT_RAGALIGN)}]",
    )
    judging.add_argument(
        "--nuggets",
        action="store_true",
        help="also nugget evaluation of the answers by the judge model (as `judge nuggets`: nuggets created from "
        "each turn's relevant passages; strict_vital, vital, strict_all, all) [off]",
    )


def _add_llm_requests_group(p: argparse.ArgumentParser) -> None:
    """Dry run, confirmation, response cache and the failure-rate limit of every LLM stage."""
    requests = p.add_argument_group("LLM requests (generator, judge, rewriter)")
    add_run_flags(requests)
    add_max_failure_rate(
        requests,
        "a stage (rewriter, generation, judging) failed on more than this share of its "
        "items; the run stops at that stage, what finished is written and the stage named",
    )


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
