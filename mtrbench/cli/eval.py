"""`mtrbench eval`: a retriever on a conversational task, result files and tables."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from mtrbench.cli.common import (
    analysis_options,
    parse_size,
    unescape,
)
from mtrbench.cli.flag_types import (
    refuse_ignored,
)
from mtrbench.cli.flags.eval import DEFAULT_MODEL, DEFAULT_TASK
from mtrbench.infra.errors import MtrbenchError, TooManyFailures
from mtrbench.retrieve import RetrieverOptions, assemble, resolve
from mtrbench.retrieve.registry import pair_name
from mtrbench.serialize.history import ALL_HISTORIES, QueryFormat, get_strategy

if TYPE_CHECKING:
    from rich.console import Console

    from mtrbench.pipeline.evaluate import EvalConfig
    from mtrbench.pipeline.plan import SkippedResult
    from mtrbench.results.result import Result
    from mtrbench.retrieve import ResolvedModel


def _listed(values: list[str] | None) -> list[str]:
    """Repeated flags and comma lists, in order, each name once."""
    names: list[str] = []
    for value in values or []:
        for name in value.split(","):
            if name.strip() and name.strip() not in names:
                names.append(name.strip())
    return names


def _eval_models(args: argparse.Namespace) -> list[str]:
    """--model (one or more), or the dual encoder named by --query-model/--doc-model."""

    if args.query_model or args.doc_model:
        if not (args.query_model and args.doc_model):
            raise MtrbenchError("--query-model and --doc-model go together")
        if args.model:
            raise MtrbenchError("use either --model or --query-model/--doc-model")

        return [pair_name(args.query_model, args.doc_model)]
    return _listed(args.model) or [DEFAULT_MODEL]


def _eval_tasks(args: argparse.Namespace) -> list[str]:
    return _listed(args.task) or [DEFAULT_TASK]


def _eval_model(args: argparse.Namespace) -> str:
    models = _eval_models(args)
    if len(models) > 1:
        raise MtrbenchError("a sweep (--alpha/--candidate-k lists) takes one --model")
    return models[0]


def _eval_task(args: argparse.Namespace) -> str:
    tasks = _eval_tasks(args)
    if len(tasks) > 1:
        raise MtrbenchError("a sweep (--alpha/--candidate-k lists) takes one --task")
    return tasks[0]


_MODEL_FLAGS, _TASK_FLAGS = ("-m", "--model"), ("-t", "--task")


def pair_argv(argv: list[str], model: str, task: str) -> list[str]:
    """The command line of one (model, task) pair of a multi-run: what re-runs that result alone."""
    kept: list[str] = []
    skip_next = False
    for word in argv:
        if skip_next:
            skip_next = False
            continue
        name = word.split("=", 1)[0]
        if name in _MODEL_FLAGS + _TASK_FLAGS:
            skip_next = "=" not in word
            continue
        if word[:2] in _MODEL_FLAGS + _TASK_FLAGS and len(word) > 2 and not word.startswith("--"):
            continue  # -mminilm
        kept.append(word)
    if not kept or kept[0] != "eval":
        return kept
    return [kept[0], "--model", model, "--task", task, *kept[1:]]


def _eval_config(args: argparse.Namespace) -> EvalConfig:
    from mtrbench.cli.llm_flags import rewriter_from_args  # deferred: typos fail before it loads
    from mtrbench.measures import parse_k_values  # deferred: loads pytrec_eval
    from mtrbench.pipeline.evaluate import EvalConfig, command_line  # deferred: loads torch

    histories = [h.strip() for h in args.history.split(",") if h.strip()]
    all_histories = histories == ["all"]
    if all_histories:
        histories = list(ALL_HISTORIES)
    fmt = QueryFormat(
        user_prefix=unescape(args.user_prefix),
        assistant_prefix=unescape(args.assistant_prefix),
        separator=unescape(args.separator),
        order=args.order,
    )
    return EvalConfig(
        histories=histories,
        truncate=args.truncate,
        fmt=fmt,
        top_k=args.top_k,
        k_values=parse_k_values(args.k_values) if args.k_values else None,
        metrics=args.metrics.split(",") if args.metrics else None,
        split=args.split,
        data_dir=args.data_dir,
        corpus_path=args.corpus,
        output_dir=Path(args.output_dir),
        command=command_line(args.argv),
        skip_inapplicable=all_histories,
        analyses=analysis_options(args),
        limit=args.limit,
        overwrite=args.overwrite_strategy,
        rewriter=rewriter_from_args(args, not args.quiet),
        protocol=args.protocol,
        ptkb=None if getattr(args, "ptkb", "none") == "none" else args.ptkb,  # as the API records "none"
    )


def _retriever_options(args: argparse.Namespace) -> RetrieverOptions:

    return RetrieverOptions.of(
        device=args.device,
        dtype=args.dtype,
        batch_size=args.batch_size,
        token_budget=args.token_budget,
        unpad=args.unpad,
        engine_mode=args.engine_mode,
        max_length=args.max_length,
        revision=args.revision,
        trust_remote_code=args.trust_remote_code,
        instruction=getattr(args, "instruction", None),  # eval's flags; rag has none
        instruction_template=_template(getattr(args, "instruction_template", None)),
        cache_dir=args.cache_dir,
        use_cache=not args.no_cache,
        pooling=args.pooling,
        similarity=args.similarity,
        show_progress=not args.quiet,
        alpha=_one(_alphas(args)),
        candidate_k=_one(_candidate_ks(args)),
        rerank=args.rerank,
        rerank_k=args.rerank_k,
        rerank_batch_size=args.rerank_batch_size,
        rerank_window=getattr(args, "rerank_window", 20),
        rerank_stride=getattr(args, "rerank_stride", None),
        rerank_llm=_listwise_llm(args),
        chunking=args.chunking,
        rank_parents=args.rank_parents,
        ray=_ray(args),
        ray_workers=args.ray_workers,
        search_memory=parse_size(args.search_memory, "--search-memory") if args.search_memory else None,
        index=args.index,
        sparse_top_k=getattr(args, "sparse_top_k", None),  # eval's flags; rag has none
    )


def _listwise_llm(args: argparse.Namespace) -> object | None:
    """The LLM of ``--rerank listwise:MODEL`` from the LLM flags; None for any other reranker."""
    rerank = getattr(args, "rerank", None) or ""
    if not rerank.startswith("listwise:"):
        if getattr(args, "reranker_base_url", None):
            raise MtrbenchError("--reranker-base-url goes with --rerank listwise:MODEL")
        return None
    if getattr(args, "dry_run", False):
        raise MtrbenchError("--dry-run: --rerank listwise asks each window after the one below it; run it with --yes")
    from mtrbench.cli.llm_flags import cache_from_args, model_judge  # deferred: loads the LLM client
    from mtrbench.retrieve.rerank_listwise import ListwiseLLM  # deferred: loads the LLM client

    judge = model_judge(rerank.split(":", 1)[1], args.reranker_base_url, args, "reranker")
    return ListwiseLLM(judge, cache_from_args(args), args.yes, not args.quiet, args.max_failure_rate)


def _ray(args: argparse.Namespace) -> str | None:
    if args.ray and args.ray_address:
        raise MtrbenchError("use either --ray (a local Ray) or --ray-address ADDR")
    if args.ray_workers is not None and not (args.ray or args.ray_address):
        raise MtrbenchError("--ray-workers goes with --ray or --ray-address")
    return args.ray_address or ("local" if args.ray else None)


def _numbers(text: str | None, kind: type, flag: str) -> tuple:
    if text is None:
        return (None,)
    try:
        values = tuple(kind(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise MtrbenchError(f"{flag} takes a number or a comma list of numbers, got '{text}'") from None
    if not values:
        raise MtrbenchError(f"{flag} is empty")
    return values


def _alphas(args: argparse.Namespace) -> tuple:
    return _numbers(args.alpha, float, "--alpha")


def _candidate_ks(args: argparse.Namespace) -> tuple:
    return _numbers(args.candidate_k, int, "--candidate-k")


def _one(values: tuple):
    """The single value of a flag that is not swept (the sweep sets each cell's own)."""
    return values[0] if len(values) == 1 else None


def _cmd_sweep(args: argparse.Namespace, console, status) -> int:
    from mtrbench.measures import label  # deferred: loads pytrec_eval
    from mtrbench.pipeline.sweep import SweepGrid, best_cell, run_sweep  # deferred: loads torch
    from mtrbench.results.table import compact_table, print_titled  # deferred: loads pytrec_eval

    say = (lambda m: None) if args.quiet else (lambda m: status.print(f"[dim]{m}[/dim]"))
    cells = run_sweep(
        _eval_model(args),
        _eval_task(args),
        _eval_config(args),
        SweepGrid(alphas=_alphas(args), candidate_ks=_candidate_ks(args)),
        _retriever_options(args),
        progress=say,
    )
    key = cells[0].results[0].main_score_key
    best = best_cell(cells)
    table = compact_table()
    for column in ("alpha", "candidate-k", *(r.history for r in cells[0].results), ""):
        table.add_column(column, justify="right")
    for i, cell in enumerate(cells):
        table.add_row(
            "default" if cell.alpha is None else f"{cell.alpha:g}",
            "default" if cell.candidate_k is None else str(cell.candidate_k),
            *(f"{r.scores[key]:.4f}" for r in cell.results),
            "<- best" if i == best else "",
        )
    print_titled(
        console,
        f"{args.task} · sweep over {len(cells)} cells · {label(key)} (best cell marked by the first history)",
        table,
    )
    for cell in cells:
        for r in cell.results:
            status.print(f"[dim]  {r.path}[/dim]", soft_wrap=True, highlight=False)
    reused = sum(cell.reused for cell in cells)
    if reused:
        status.print(
            f"note: {reused} of {sum(len(c.results) for c in cells)} results were finished and read back "
            f"(--overwrite-strategy always evaluates them again)",
            soft_wrap=True,
            highlight=False,
            markup=False,
        )
    return 0


def _check_names(args: argparse.Namespace) -> None:
    """History and measure typos, with the light parsers alone: the pipeline (torch, the LLM client) is not imported
    yet. check_before_loading checks the whole request again once it is."""
    for name in (h.strip() for h in args.history.split(",")):
        if name and name != "all":
            get_strategy(name)
    if args.metrics:
        from mtrbench.measures import parse_k_values, parse_measures  # deferred: loads pytrec_eval

        parse_measures(args.metrics.split(","), parse_k_values(args.k_values) if args.k_values else [10])


def _check_ikat_out(args: argparse.Namespace) -> None:
    """--ikat-out writes one run: one ikat-* task, one model, one history, no sweep."""
    from mtrbench.data import resolve_card  # deferred: typos fail before it loads

    if not args.ikat_out:
        if args.passage_db:
            raise MtrbenchError("--passage-db checks the --ikat-out file: give --ikat-out too")
        return
    histories = [h.strip() for h in args.history.split(",") if h.strip()]
    one = len(_eval_tasks(args)) == 1 and len(_eval_models(args)) == 1 and len(histories) == 1
    if not one or histories == ["all"] or len(_alphas(args)) > 1 or len(_candidate_ks(args)) > 1:
        raise MtrbenchError("--ikat-out writes one run as a TREC iKAT file: one --task, one --model, one --history")
    card = resolve_card(_eval_tasks(args)[0])
    if card.format != "ikat":
        raise MtrbenchError(f"--ikat-out writes a TREC iKAT run: task '{card.name}' is not ikat-2023/2024/2025")


def _write_ikat_out(args: argparse.Namespace, result, status) -> None:
    from mtrbench.data import load_task, resolve_card  # deferred: typos fail before it loads
    from mtrbench.results.ikat_out import write_ikat_out  # deferred: typos fail before it loads

    card = resolve_card(_eval_tasks(args)[0])
    task = load_task(card, split=result.split, data_dir=args.data_dir, corpus_path=args.corpus)
    checks = write_ikat_out(Path(args.ikat_out), result, card, task, Path(args.passage_db) if args.passage_db else None)
    _note(
        status,
        f"TREC iKAT run: {args.ikat_out} ({len(task.queries)} turns; structural checks passed, "
        f"{len(checks.warnings)} warnings" + (f", first: {checks.warnings[0]}" if checks.warnings else "") + ")",
    )


def _check_mtrag_out(args: argparse.Namespace) -> None:
    """--mtrag-out writes one run: one task (an MTRAG/MTRAG-UN card), one model, one history, no sweep."""
    from mtrbench.data import resolve_card  # deferred: typos fail before it loads
    from mtrbench.results.mtrag_taska import check_request  # deferred: typos fail before it loads

    if not args.mtrag_out:
        return
    histories = [h.strip() for h in args.history.split(",") if h.strip()]
    why = (
        "one --task"
        if len(_eval_tasks(args)) > 1
        else "one --model"
        if len(_eval_models(args)) > 1
        else "one --history"
        if len(histories) != 1 or histories == ["all"]
        else "no sweep (--alpha/--candidate-k lists)"
        if len(_alphas(args)) > 1 or len(_candidate_ks(args)) > 1
        else None
    )
    if why:
        raise MtrbenchError(f"--mtrag-out writes one run as an MTRAGEval Task A file: it takes {why}")

    check_request(args.mtrag_out, resolve_card(_eval_tasks(args)[0]))


def _write_mtrag_out(args: argparse.Namespace, result, status) -> None:
    """The Task A file of the run (evaluated now, or finished before and read back from its .run.trec)."""
    from mtrbench.data import load_task, resolve_card  # deferred: typos fail before it loads
    from mtrbench.results.mtrag_taska import MODE, write_taska  # deferred: typos fail before it loads

    task = load_task(
        resolve_card(_eval_tasks(args)[0]), split=result.split, data_dir=args.data_dir, corpus_path=args.corpus
    )
    count = write_taska(args.mtrag_out, result, task)
    status.print(
        f"MTRAGEval Task A predictions ({MODE}): {args.mtrag_out} ({count} tasks)",
        soft_wrap=True,
        highlight=False,
        markup=False,
    )
    left_out = result.meta.get("queries", {}).get("total", count) - count
    if left_out > 0:
        status.print(
            f"warning: {left_out} queries are not in the run (the rewriter failed on them) and not in "
            f"{args.mtrag_out}; a rerun asks only the failed requests",
            soft_wrap=True,
            highlight=False,
            markup=False,
        )


def _cmd_eval(args: argparse.Namespace) -> int:

    _check_names(args)  # before the imports below, which load the pipeline
    _refuse_flags_bm25_ignores(args)
    _check_mtrag_out(args)
    _check_ikat_out(args)
    from rich.console import Console

    from mtrbench.pipeline.plan import check_before_loading  # deferred: loads torch

    console = Console()  # tables and results: stdout
    status = Console(stderr=True)  # progress, notes, warnings and where files went: stderr
    config = _eval_config(args)
    if len(_alphas(args)) > 1 or len(_candidate_ks(args)) > 1:
        return _cmd_sweep(args, console, status)
    models, tasks = _eval_models(args), _eval_tasks(args)
    options = _retriever_options(args)
    resolved = [resolve(m, args.model_kind, args.revision) for m in models]  # unknown names fail before loading
    check_before_loading(config, tasks)
    outcome = _evaluate_pairs(args, resolved, tasks, config, options, console, status)
    if config.rewriter is not None and config.rewriter.dry_run:
        if args.mtrag_out:
            _note(status, f"note: --mtrag-out {args.mtrag_out} not written: a dry run retrieves nothing")
        return 0
    _report_written(args, outcome, status)
    for failure in outcome.failures:
        print(f"error: {failure}", file=sys.stderr)
    return TooManyFailures.exit_code if outcome.failures else 0


# Flags of the encoder and its search that BM25 never reads (given, they would be silently ignored and absent from the
# result's identity): refused when every model evaluated is BM25. Execution-only settings (--device, --batch-size,
# --token-budget) stay accepted, as for any model: they never change a result.
ENCODER_ONLY_FLAGS = (
    ("--index", "index"),
    ("--search-memory", "search_memory"),
    ("--ray", "ray"),
    ("--ray-address", "ray_address"),
    ("--ray-workers", "ray_workers"),
    ("--max-length", "max_length"),
    ("--instruction", "instruction"),
    ("--instruction-template", "instruction_template"),
    ("--pooling", "pooling"),
    ("--similarity", "similarity"),
)


def _refuse_flags_bm25_ignores(args: argparse.Namespace) -> None:

    models = [resolve(name, args.model_kind, args.revision) for name in _eval_models(args)]  # nothing is loaded
    if all(m.spec is not None and m.spec.kind == "lexical" for m in models):
        refuse_ignored(
            {flag: getattr(args, dest) not in (None, False) for flag, dest in ENCODER_ONLY_FLAGS},
            f"to encoder models; {', '.join(m.requested for m in models)} is BM25, which would ignore {{it}}",
        )


def _note(status: Console, text: str) -> None:
    """One plain line on stderr (no markup: paths and flags print as typed)."""
    status.print(text, soft_wrap=True, highlight=False, markup=False)


@dataclass
class _EvalOutcome:
    """What the (model, task) pairs of one `mtrbench eval` left."""

    written: list[Result] = field(default_factory=list)  # evaluated now
    finished: list[Path] = field(default_factory=list)  # skipped as finished (--mtrag-out reads the one run back)
    failures: list[str] = field(default_factory=list)  # too many failed requests: shown, and the command fails


def _evaluate_pairs(
    args: argparse.Namespace,
    resolved: list[ResolvedModel],
    tasks: list[str],
    config: EvalConfig,
    options: RetrieverOptions,
    console: Console,
    status: Console,
) -> _EvalOutcome:
    """Every model on every task, each model loaded once; the tables of each pair printed as it finishes."""
    from mtrbench.pipeline.card_instruction import with_card_instruction  # deferred: loads the pipeline
    from mtrbench.pipeline.evaluate import command_line, run_eval  # deferred: loads torch
    from mtrbench.pipeline.known_plans import finished_before_loading  # deferred: loads torch
    from mtrbench.pipeline.sweep import in_history_order  # deferred: loads torch
    from mtrbench.results.result import Result  # deferred: typos fail before it loads
    from mtrbench.results.show import print_results  # deferred: loads pytrec_eval

    outcome = _EvalOutcome()
    say = (lambda m: None) if args.quiet else (lambda m: status.print(f"[dim]{m}[/dim]"))
    pair_finished: list[Path] = []  # the current pair's finished results, shown in its table beside the new ones

    def skipped(s: SkippedResult) -> None:
        outcome.finished.append(s.path)
        pair_finished.append(s.path)
        _note(
            status,
            f"note: skipped {s.model} on {s.task} (history {s.history}): finished result with the same "
            f"settings at {s.path} (--overwrite-strategy {args.overwrite_strategy})",
        )

    single = len(resolved) * len(tasks) == 1  # the command as typed; else the one that re-runs this pair
    for model in resolved:
        retriever, loaded_with = None, options
        for task in tasks:
            pair_options = with_card_instruction(options, model, task)
            if pair_options != loaded_with:  # another task description: another query prompt, so load again
                retriever, loaded_with = None, pair_options
            pair_config = (
                config if single else replace(config, command=command_line(pair_argv(args.argv, model.requested, task)))
            )
            if retriever is None:
                finished = finished_before_loading(model, task, pair_config, pair_options)
                if finished is not None:  # an earlier plan of this request: every history finished, nothing loaded
                    for s in finished:
                        skipped(s)
                    shown = in_history_order([Result.load(s.path) for s in finished], pair_config.histories)
                    print_results(model.requested, task, shown, console, status)
                    continue
                say(f"Loading model {model.requested}")
                retriever = assemble(model, pair_options)
            if not single:
                status.print(f"[bold]{model.requested} on {task}[/bold]", highlight=False)
            pair_finished.clear()
            try:
                results = run_eval(
                    model, task, pair_config, pair_options, progress=say, retriever=retriever, on_skip=skipped
                )
            except TooManyFailures as failure:  # the other histories finished: shown, and the command fails
                results = failure.finished
                outcome.failures.append(str(failure))
            if results or pair_finished:
                reused = [Result.load(path) for path in pair_finished]
                shown = in_history_order([*results, *reused], pair_config.histories)
                print_results(model.requested, task, shown, console, status)
                outcome.written.extend(results)
    return outcome


def _template(text: str | None) -> str | None:
    """--instruction-template as typed on a shell line: ``\\n`` is a newline, as in --separator."""
    return None if text is None else unescape(text)


def _report_written(args: argparse.Namespace, outcome: _EvalOutcome, status: Console) -> None:
    """Where the result files went, and the --mtrag-out file of the run (evaluated now or read back)."""
    from mtrbench.results.result import Result  # deferred: typos fail before it loads

    status.print(
        f"[dim]results: {len(outcome.written)} JSON file(s) written with TREC runs and per-query metrics under "
        f"{Path(args.output_dir).resolve()}[/dim]",
        soft_wrap=True,
        highlight=False,
    )
    for r in outcome.written:
        status.print(f"[dim]  {r.path}[/dim]", soft_wrap=True, highlight=False)
    if args.mtrag_out and (outcome.written or outcome.finished):
        run = outcome.written[0] if outcome.written else Result.load(outcome.finished[0])
        _write_mtrag_out(args, run, status)
    elif args.mtrag_out:
        _note(status, f"note: --mtrag-out {args.mtrag_out} not written: no run was made")
    if args.ikat_out and (outcome.written or outcome.finished):
        _write_ikat_out(args, outcome.written[0] if outcome.written else Result.load(outcome.finished[0]), status)
    elif args.ikat_out:
        _note(status, f"note: --ikat-out {args.ikat_out} not written: no run was made")
