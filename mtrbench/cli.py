"""``mtrbench`` command line. User errors print one line and exit 2; bugs keep their traceback."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from mtrbench import __version__
from mtrbench.errors import MtrbenchError


def _add_eval(sub) -> None:
    p = sub.add_parser("eval", help="evaluate a retriever on a conversational task",
                       description="Evaluate a retriever on a task. With no arguments: MiniLM on the embedded "
                                   "offline sample (mtrbench-sample).")
    p.add_argument("--model", help="alias (`mtrbench models`), HF id or local folder [minilm]")
    p.add_argument("--task", default="mtrbench-sample", help="task name (`mtrbench tasks`), card YAML or data folder")
    _add_data_options(p)
    p.add_argument("--history", default="full",
                   help="current | full | window:K | questions | last-response | rewrite; comma list or 'all' [full]")
    p.add_argument("--truncate", default="left", choices=["left", "right", "none"],
                   help="left keeps the current question and drops the oldest text; right = tokenizer default [left]")
    p.add_argument("--user-prefix", default="User: ")
    p.add_argument("--assistant-prefix", default="Agent: ")
    p.add_argument("--separator", default="\\n", help="between messages (escapes like \\n allowed) [\\n]")
    p.add_argument("--order", default="history-first", choices=["history-first", "current-first"])
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N [auto]")
    p.add_argument("--dtype", default="auto", help="auto (bf16 on CUDA, fp32 on CPU) | fp32 | fp16 | bf16")
    p.add_argument("--batch-size", type=int, help="at most this many texts per batch [no cap: --token-budget decides]")
    p.add_argument("--token-budget", type=int,
                   help="tokens per batch, padding included (texts are length-sorted) [4096 on CPU, 65536 on CUDA]")
    p.add_argument("--unpad", default="auto", choices=["auto", "on", "off"],
                   help="pack batches without padding: auto = on CUDA when the model passes a self-check [auto]")
    p.add_argument("--max-length", type=int, help="token limit for queries and documents [model's]")
    p.add_argument("--query-model", help="dual encoder: query tower (transformers folder or HF id); with --doc-model")
    p.add_argument("--doc-model", help="dual encoder: document tower; with --query-model")
    p.add_argument("--pooling", choices=["cls", "mean", "last"], help="dual encoder pooling [cls]")
    p.add_argument("--similarity", choices=["dot", "cosine"], help="dual encoder similarity [dot]")
    p.add_argument("--cache-dir", help="corpus embedding cache [$MTRBENCH_CACHE_DIR/embeddings or "
                                       "~/.cache/mtrbench/embeddings]")
    p.add_argument("--no-cache", action="store_true", help="encode the corpus without reading or writing the cache")
    p.add_argument("--top-k", type=int, default=100, help="documents retrieved per query [100]")
    p.add_argument("--k", dest="k_values", help="metric cutoffs, comma separated [task card's: 1,3,5,10,20,100]")
    p.add_argument("--metrics", help="measures (`mtrbench metrics`): strings like nDCG@10,R@100(rel=2), or family "
                                     "names expanded over --k [task card's: ndcg,recall,mrr,map,precision,hit]")
    p.add_argument("--revision", help="model revision (commit) on the Hub")
    p.add_argument("--trust-remote-code", action="store_true", help="allow code from the model repository")
    p.add_argument("--output-dir", default="results", help="where result files go [results]")
    _add_analysis_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress output")


def _eval_model(args) -> str:
    """--model, or the dual encoder named by --query-model/--doc-model."""
    if args.query_model or args.doc_model:
        if not (args.query_model and args.doc_model):
            raise MtrbenchError("--query-model and --doc-model go together")
        if args.model:
            raise MtrbenchError("use either --model or --query-model/--doc-model")
        from mtrbench.retrieve.registry import pair_name

        return pair_name(args.query_model, args.doc_model)
    return args.model or "minilm"


def _cmd_eval(args) -> int:
    from rich.console import Console

    from mtrbench.evaluate import ALL_HISTORIES, EvalConfig, command_line, run_eval
    from mtrbench.measures import parse_k_values
    from mtrbench.results.table import strategies_table, turn_table
    from mtrbench.serialize.history import QueryFormat

    console = Console(stderr=False)
    histories = [h.strip() for h in args.history.split(",") if h.strip()]
    all_histories = histories == ["all"]
    if all_histories:
        histories = list(ALL_HISTORIES)
    fmt = QueryFormat(user_prefix=_unescape(args.user_prefix), assistant_prefix=_unescape(args.assistant_prefix),
                      separator=_unescape(args.separator), order=args.order)
    config = EvalConfig(histories=histories, truncate=args.truncate, fmt=fmt, top_k=args.top_k,
                        k_values=parse_k_values(args.k_values) if args.k_values else None,
                        metrics=args.metrics.split(",") if args.metrics else None, split=args.split,
                        data_dir=args.data_dir, corpus_path=args.corpus, output_dir=Path(args.output_dir), command=command_line(args.argv),
                        skip_inapplicable=all_histories)
    if (args.batch_size is not None and args.batch_size < 1) or args.top_k < 1:
        raise MtrbenchError("--batch-size and --top-k must be positive")
    model = _eval_model(args)
    options = {"device": args.device, "dtype": args.dtype, "batch_size": args.batch_size,
               "max_length": args.max_length, "trust_remote_code": args.trust_remote_code,
               "revision": args.revision, "show_progress": not args.quiet, "token_budget": args.token_budget,
               "unpad": args.unpad, "cache_dir": args.cache_dir, "use_cache": not args.no_cache,
               "pooling": args.pooling, "similarity": args.similarity}
    say = (lambda m: None) if args.quiet else (lambda m: console.print(f"[dim]{m}[/dim]"))
    config.analyses = lambda qrels, run, evaluation, measures: run_analyses(args, qrels, run, evaluation, measures)
    results = run_eval(model, args.task, config, options, progress=say)
    first = results[0]
    title = f"{args.task} · {model} · {first.n_evaluated} queries evaluated"
    if first.n_excluded:
        title += f", {first.n_excluded} without gold excluded"
    strategies_table(title, results, console)
    turn_table(results, console)
    for r in results:
        if r.analyses:
            console.print(f"[bold]{r.history}[/bold]")
            _print_analyses(r.analyses, console)
    console.print(f"[dim]results: {len(results)} JSON file(s) with TREC runs and per-query metrics under "
                  f"{Path(args.output_dir).resolve()}[/dim]", soft_wrap=True)
    for r in results:
        console.print(f"[dim]  {r.paths.json}[/dim]", soft_wrap=True)
    return 0


def _add_analysis_options(p) -> None:
    p.add_argument("--refined-qrels", help="refined qrels (e.g. BRIDGE): scores on both, differences, BRIDGE Hole@k")
    p.add_argument("--generation-judgments", help="per-query binary generation outcomes (JSONL qid/label or TSV) "
                                                  "for RAGAlign")
    p.add_argument("--ragalign-metric", default="hit_rate_at_10", help="binary retrieval metric for RAGAlign")
    p.add_argument("--ragalign-continuous", default="ndcg_at_10", help="metric for point-biserial RAGAlign")


def _add_score(sub) -> None:
    p = sub.add_parser("score", help="score a TREC run file against a TREC qrels file (pytrec_eval)")
    p.add_argument("--run", required=True)
    p.add_argument("--qrels", required=True)
    p.add_argument("--k", dest="k_values", default="1,3,5,10,20,100")
    p.add_argument("--relevance-level", type=int, default=1, help="minimum grade counted relevant by binary "
                                                                  "measures (TREC CAsT: 2) [1]")
    p.add_argument("--metrics", default="ndcg,recall,mrr,map,precision,hit",
                   help="measures (`mtrbench metrics`): strings like nDCG@10,R@100(rel=2), or family names "
                        "expanded over --k; also hole_unjudged (per query), hole_beir (BEIR's global Hole@k)")
    _add_analysis_options(p)
    p.add_argument("--per-query", action="store_true", help="print per-query values as JSON lines")
    p.add_argument("--output", help="write the scores as JSON here")


def run_analyses(args, qrels, run, evaluation, measures) -> dict:
    """Refined-qrels comparison and RAGAlign, as asked for on the command line (shared by eval and score)."""
    from mtrbench.formats.verdicts import read_generation_judgments
    from mtrbench.metrics.report import ragalign_report, refined_comparison
    from mtrbench.formats.qrels import read_qrels

    out: dict = {}
    evaluations = {"qrels": evaluation}
    refined_path = getattr(args, "refined_qrels", None)
    if refined_path:
        comparison = refined_comparison(qrels, read_qrels(refined_path), run, measures, evaluation.relevance_level)
        evaluations = dict(zip(("original", "refined"), comparison.pop("_evaluations")))
        out["refined_qrels"] = comparison
    if getattr(args, "generation_judgments", None):
        generation = read_generation_judgments(args.generation_judgments)
        out["ragalign"] = ragalign_report(evaluations, generation, args.ragalign_metric, args.ragalign_continuous)
    return out


def _cmd_score(args) -> int:
    from rich.console import Console

    from mtrbench.metrics.report import confidence_intervals
    from mtrbench.atomic import atomic_write_text
    from mtrbench.formats.qrels import read_qrels
    from mtrbench.formats.run import read_run
    from mtrbench.measures import evaluate, parse_k_values, parse_measures
    from mtrbench.results.table import scores_table

    qrels = read_qrels(args.qrels)
    run = read_run(args.run)
    measures = parse_measures(args.metrics.split(","), parse_k_values(args.k_values))
    unjudged_run_queries = sorted(set(run) - set(qrels))
    evaluation = evaluate(qrels, run, measures, relevance_level=args.relevance_level)
    scores = evaluation.scores()
    analyses = run_analyses(args, qrels, run, evaluation, measures)
    if args.per_query:
        for qid, values in evaluation.per_query.items():
            print(json.dumps({"qid": qid, **values}))
    console = Console()
    scores_table(f"{Path(args.run).name}: {len(evaluation.per_query)} queries evaluated, "
                 f"{len(evaluation.excluded)} without positives excluded, "
                 f"{len(unjudged_run_queries)} run queries without qrels ignored", scores, console)
    _print_analyses(analyses, console)
    if args.output:
        atomic_write_text(args.output, json.dumps({
            "run": str(args.run), "qrels": str(args.qrels), "scores": scores,
            "confidence_intervals": confidence_intervals(evaluation, evaluation.metric_keys),
            "queries": {"evaluated": len(evaluation.per_query), "excluded_without_positives": len(evaluation.excluded),
                        "run_queries_without_qrels": len(unjudged_run_queries)},
            **analyses, "per_query": evaluation.per_query}, indent=2) + "\n")
    return 0


def _print_analyses(analyses: dict, console) -> None:
    from mtrbench.results.table import scores_table

    if "refined_qrels" in analyses:
        ref = analyses["refined_qrels"]
        scores_table("BRIDGE Hole@k (share of the top-k that refinement newly found relevant)", ref["hole_bridge"],
                     console)
        headline = {k: v for k, v in ref["difference"].items() if k.endswith("_at_10")}
        scores_table("refined minus original (at 10)", headline, console)
    for label, parts in analyses.get("ragalign", {}).items():
        for kind, r in parts.items():
            p = f", p={r['p_value']:.3g}" if r["p_value"] is not None else ""
            console.print(f"RAGAlign ({label}, {kind}, {r['metric']}): {r['value']:.4f} (n={r['n']}{p}"
                          f"{', ' + str(r['missing_generation']) + ' without generation judgment' if r['missing_generation'] else ''})")


def _add_compare(sub) -> None:
    p = sub.add_parser("compare", help="paired significance tests between two result files of one task")
    p.add_argument("result_a")
    p.add_argument("result_b")
    p.add_argument("--metrics", help="metric keys to compare [every per-query metric both have]")
    p.add_argument("--output", help="write the comparison as JSON here")


def _cmd_compare(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from mtrbench.metrics.significance import compare_paired
    from mtrbench.atomic import atomic_write_text
    from mtrbench.measures import label as pretty_name
    from mtrbench.results.compare import load_per_query

    a_name, a = load_per_query(args.result_a)
    b_name, b = load_per_query(args.result_b)
    common = sorted(set(a) & set(b))
    if not common:
        raise MtrbenchError("the two results share no evaluated query: are they the same task and split?")
    only = len(set(a) ^ set(b))
    keys = [k for k in next(iter(a.values())) if k in next(iter(b.values()))]
    if args.metrics:
        wanted = [m.strip() for m in args.metrics.split(",") if m.strip()]
        missing = [m for m in wanted if m not in keys]
        if missing:
            raise MtrbenchError(f"metric(s) {missing} not in both per-query files; available: {', '.join(keys)}")
        keys = wanted
    rows = [compare_paired(key, [a[q][key] for q in common], [b[q][key] for q in common]) for key in keys]
    table = Table(title=f"B = {b_name} vs A = {a_name}: {len(common)} paired queries"
                        + (f" ({only} not in both, left out)" if only else ""), title_justify="left")
    for column in ("metric", "A", "B", "B-A", "CI95(B-A)", "p(t)", "p(rand)", "d"):
        table.add_column(column, justify="right")
    for r in rows:
        table.add_row(pretty_name(r.metric), f"{r.mean_a:.4f}", f"{r.mean_b:.4f}", f"{r.diff:+.4f}",
                      f"{r.diff_ci95[0]:+.3f},{r.diff_ci95[1]:+.3f}",
                      "-" if r.t_p_value is None else f"{r.t_p_value:.3g}", f"{r.randomization_p_value:.3g}",
                      "-" if r.effect_size is None else f"{r.effect_size:+.2f}")
    Console().print(table)
    if args.output:
        atomic_write_text(args.output, json.dumps({"a": args.result_a, "b": args.result_b, "paired_queries": len(common),
                                                   "unpaired_queries": only,
                                                   "comparisons": [r.as_dict() for r in rows]}, indent=2) + "\n")
    return 0


def _add_pool(sub) -> None:
    p = sub.add_parser("pool", help="pool growth rate and marginal contribution over several runs (DREAM App. H)")
    p.add_argument("runs", nargs="+", help="TREC run files of one task")
    p.add_argument("--qrels", required=True, help="original qrels")
    p.add_argument("--refined-qrels", required=True, help="refined qrels (original + newly found relevant)")
    p.add_argument("--k", type=int, default=10, help="pool depth and metric cutoff [10]")
    p.add_argument("--metric", default="hit", choices=["hit", "ndcg", "recall"])
    p.add_argument("--orders", type=int, default=10, help="random orders averaged [10]")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", help="write the analysis as JSON here")


def _cmd_pool(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from mtrbench.metrics.pool import pool_analysis
    from mtrbench.atomic import atomic_write_text
    from mtrbench.formats.qrels import read_qrels
    from mtrbench.formats.run import read_run

    names = [Path(r).name for r in args.runs]
    if len(set(names)) != len(names):
        names = [str(r) for r in args.runs]
    runs = dict(zip(names, (read_run(r) for r in args.runs)))
    result = pool_analysis(runs, read_qrels(args.qrels), read_qrels(args.refined_qrels), k=args.k,
                           metric=args.metric, n_orders=args.orders, seed=args.seed)
    console = Console()
    table = Table(title=f"pool growth over {len(names)} runs ({args.orders} orders, seed {args.seed}, k={args.k})",
                  title_justify="left")
    for column in ("pool size m", "holes found", "growth rate GR(m)", f"MC(m) {args.metric}@{args.k}"):
        table.add_column(column, justify="right")
    for m in range(1, len(names) + 1):
        gr = result.growth_rate[m - 1]
        mc = result.marginal_contribution_by_size[m - 1] if m - 1 < len(result.marginal_contribution_by_size) else None
        table.add_row(str(m), f"{result.holes_per_size[m - 1]:.1f}", "-" if gr is None else f"{gr:.4f}",
                      "-" if mc is None else f"{mc:.4f}")
    console.print(table)
    table = Table(title="marginal contribution, leave-one-out", title_justify="left")
    table.add_column("run")
    table.add_column(f"MC {args.metric}@{args.k}", justify="right")
    for name, value in result.marginal_contribution.items():
        table.add_row(name, f"{value:.4f}")
    console.print(table)
    if args.output:
        atomic_write_text(args.output, json.dumps(result.as_dict(), indent=2) + "\n")
    return 0


def _add_tasks(sub) -> None:
    p = sub.add_parser("tasks", help="list task cards, or `tasks show NAME [--stats]`")
    p.add_argument("action", nargs="?", default="list", choices=["list", "show"])
    p.add_argument("name", nargs="?")
    p.add_argument("--stats", action="store_true", help="load the data and print descriptive statistics")
    _add_data_options(p)


def _add_data_options(p) -> None:
    p.add_argument("--split", help="split [the card's eval split]")
    p.add_argument("--data-dir", help="local copy of the task's data, laid out as published")
    p.add_argument("--corpus", help="external corpus, for tasks that do not ship one")


def _add_export(sub) -> None:
    p = sub.add_parser("export", help="write a task as BEIR files or Hugging Face datasets")
    p.add_argument("task")
    p.add_argument("--format", required=True, choices=["beir", "hf"])
    p.add_argument("--out", required=True)
    _add_data_options(p)


def _cmd_export(args) -> int:
    from mtrbench.data import load_task
    from mtrbench.data.export import export_beir, export_hf

    task = load_task(args.task, split=args.split, data_dir=args.data_dir, corpus_path=args.corpus)
    paths = (export_beir if args.format == "beir" else export_hf)(task, Path(args.out))
    print(f"exported {task.name} ({task.split}: {len(task.queries)} queries, {len(task.corpus)} documents) to "
          + ", ".join(str(p) for p in paths))
    return 0


def _cmd_tasks(args) -> int:
    import yaml
    from rich.console import Console
    from rich.table import Table

    from mtrbench.data.cards import all_cards

    console = Console()
    if args.action == "show":
        if not args.name:
            raise MtrbenchError("usage: mtrbench tasks show NAME")
        from mtrbench.data import resolve_card

        card = resolve_card(args.name)
        print(yaml.safe_dump(card.to_dict(), sort_keys=False, allow_unicode=True, width=100), end="")
        if args.stats:
            from mtrbench.data import load_task
            from mtrbench.data.stats import task_stats

            task = load_task(card, split=args.split, data_dir=args.data_dir, corpus_path=args.corpus,
                             require_corpus=False)
            print(yaml.safe_dump({"stats": task_stats(task)}, sort_keys=False, width=100), end="")
        return 0
    table = Table(title="mtrbench tasks", title_justify="left")
    for column in ("name", "split", "main score", "source (hub@revision or local path)"):
        table.add_column(column, no_wrap=not column.startswith("source"), overflow="fold")
    for card in all_cards().values():
        source = card.source.hub or f"(local) {card.source.path}"
        if card.source.hub and card.source.revision:
            source += f"@{card.source.revision[:7]}"
        table.add_row(card.name, card.eval_split, card.main_score, source)
    console.print(table)
    return 0


def _add_models(sub) -> None:
    sub.add_parser("models", help="list model aliases and their prompts")


def _cmd_models(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from mtrbench.retrieve.registry import REGISTRY

    table = Table(title="model aliases (any HF id or local folder works too)", title_justify="left")
    for column in ("alias", "checkpoint", "query prompt", "doc prompt", "notes"):
        table.add_column(column)
    for spec in REGISTRY.values():
        query = repr(spec.query_prompt) if spec.query_prompt else (f"<{spec.query_prompt_name}>" if spec.query_prompt_name else "")
        table.add_row(spec.alias, spec.model_id or "-", query, repr(spec.doc_prompt) if spec.doc_prompt else "",
                      spec.description)
    Console().print(table)
    return 0


def _unescape(text: str) -> str:
    return text.encode("utf-8").decode("unicode_escape") if "\\" in text else text


COMMANDS = {"eval": _cmd_eval, "score": _cmd_score, "tasks": _cmd_tasks, "models": _cmd_models,
            "export": _cmd_export, "compare": _cmd_compare, "pool": _cmd_pool}


# Commands that live beside their concept: each module's ``register(sub)`` adds its parsers and
# returns {command name: handler}.
COMMAND_MODULES = ("mtrbench.encode.cli", "mtrbench.audit.cli", "mtrbench.assess.cli", "mtrbench.leaderboard.cli")


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = argparse.ArgumentParser(prog="mtrbench", description="Evaluate retrievers on multi-turn conversations.")
    parser.add_argument("--version", action="version", version=f"mtrbench {__version__}")
    sub = parser.add_subparsers(dest="command")
    for add in (_add_eval, _add_score, _add_compare, _add_pool, _add_tasks, _add_models, _add_export):
        add(sub)
    for module in COMMAND_MODULES:
        COMMANDS.update(importlib.import_module(module).register(sub))
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # recorded in results as the reproducing command
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return COMMANDS[args.command](args)
    except MtrbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
