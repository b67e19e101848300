"""`mtrbench score`, `compare` and `pool`: analyses of TREC run and qrels files and of result files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from mtrbench.cli.common import analysis_options
from mtrbench.data import load_task, resolve_card
from mtrbench.formats.ikat_run import check_run
from mtrbench.formats.qrels import read_qrels
from mtrbench.formats.run import read_run
from mtrbench.infra.atomic import atomic_write_text, ensure_parent
from mtrbench.infra.errors import MtrbenchError
from mtrbench.infra.numeric import json_text
from mtrbench.results.compare_setup import JudgmentSource, baseline_index, measure_keys, named, run_judgments
from mtrbench.results.ikat_out import card_year, task_run, topic_turns
from mtrbench.results.paired_report import compared_metrics, paired_queries, paired_report
from mtrbench.results.pool_report import check_refined_keeps_original, contribution_table, growth_table
from mtrbench.results.scored_run import score_run, task_qrels

if TYPE_CHECKING:
    pass


def _cmd_score(args: argparse.Namespace) -> int:
    if args.predictions:
        return _cmd_score_predictions(args)
    args.metrics = args.metrics or "ndcg,recall,mrr,map,precision,hit"
    args.k_values = args.k_values or "1,3,5,10,20,100"
    if not (args.qrels or args.task):
        raise MtrbenchError("score --run needs the qrels: --qrels FILE or --task NAME")
    from rich.console import Console

    from mtrbench.analyses.run import run_analyses  # deferred: loads pytrec_eval
    from mtrbench.measures import parse_k_values, parse_measures  # deferred: loads pytrec_eval
    from mtrbench.measures.protocols import choose  # deferred: loads pytrec_eval
    from mtrbench.results.show import print_analyses  # deferred: loads pytrec_eval
    from mtrbench.results.table import scores_table  # deferred: loads pytrec_eval

    if (args.split or args.data_dir) and not args.task:
        raise MtrbenchError("--split and --data-dir choose the task's qrels: they need --task")
    measures = parse_measures(args.metrics.split(","), parse_k_values(args.k_values))
    # --task: its card's protocol unless --protocol says otherwise, as eval; an official protocol's own threshold
    chosen = choose(args.protocol, args.relevance_level, resolve_card(args.task) if args.task else None)
    chosen.protocol.check(measures)
    run = read_run(args.run)
    qrels_source, qrels = _score_qrels(args)
    scored = score_run(args.run, qrels_source, chosen.protocol, qrels, run, measures, chosen.relevance_level)
    evaluation = scored.evaluation
    scores = evaluation.scores()
    analyses = run_analyses(analysis_options(args), qrels, run, evaluation, measures)
    if args.per_query:
        for qid, values in evaluation.per_query.items():
            print(json_text({"qid": qid, **values}, path=f"--per-query line of {qid}"))
    console = Console()
    scores_table(scored.title(), scores, console)
    print_analyses(analyses, console)
    if args.output:
        atomic_write_text(args.output, json_text(scored.report(scores, analyses), path=args.output, indent=2) + "\n")
    return 0


def _score_qrels(args: argparse.Namespace) -> tuple[str, dict[str, dict[str, int]]]:
    """Where the qrels come from (shown and recorded) and the qrels."""
    if args.task:
        return task_qrels(args.task, args.split, args.data_dir)[:2]
    return str(args.qrels), read_qrels(args.qrels)


def _cmd_score_predictions(args: argparse.Namespace) -> int:
    """An MTRAGEval Task A prediction file: one row per collection and the script's weighted "all" row; with
    --task, a TREC iKAT run."""
    if args.task:
        return _cmd_score_ikat(args)
    from rich.console import Console

    from mtrbench.measures import parse_k_values, parse_measures  # deferred: loads pytrec_eval
    from mtrbench.measures.protocols import for_run  # deferred: loads pytrec_eval
    from mtrbench.measures.protocols.mtrag_predictions import score_predictions  # deferred: loads pytrec_eval
    from mtrbench.results.table import compact_table, pretty_name  # deferred: loads pytrec_eval

    if args.qrels or args.task or args.split:
        raise MtrbenchError(
            "--predictions takes its qrels from --data-dir (the folder with MTRAG's qrels), not "
            "--qrels, --task or --split"
        )
    if not args.data_dir:
        raise MtrbenchError(
            "--predictions needs --data-dir: an IBM/mt-rag-benchmark clone or a folder with <domain>.tsv qrels"
        )
    if args.protocol not in (None, "official", "official:mtrag"):
        raise MtrbenchError(
            f"--predictions is scored by MTRAG's retrieval script's conventions: --protocol "
            f"official:mtrag, not '{args.protocol}'"
        )
    if args.per_query or args.refined_qrels or args.generation_judgments:
        raise MtrbenchError("--per-query, --refined-qrels and --generation-judgments apply to --run")
    measures = parse_measures((args.metrics or "ndcg,recall").split(","), parse_k_values(args.k_values or "1,3,5,10"))
    protocol = for_run("official:mtrag")
    protocol.check(measures)
    rows = score_predictions(
        Path(args.predictions),
        Path(args.data_dir),
        measures,
        args.relevance_level,  # MTRAG's script counts grade >= 1; another level is refused
    )
    table = compact_table()
    table.add_column("metric")
    for row in rows:
        table.add_column(f"{row.collection} ({row.count})", justify="right")
    for key in rows[-1].scores:
        table.add_row(pretty_name(key), *(f"{row.scores[key]:.5f}" if key in row.scores else "" for row in rows))
    Console().print(table)
    if args.output:
        atomic_write_text(
            args.output,
            json_text(
                {
                    "predictions": str(args.predictions),
                    "qrels": str(args.data_dir),
                    "protocol": protocol.setting,
                    "collections": {row.collection: {"predictions": row.count, "scores": row.scores} for row in rows},
                },
                path=args.output,
                indent=2,
            )
            + "\n",
        )
    return 0


def _cmd_score_ikat(args: argparse.Namespace) -> int:
    """A TREC iKAT run over an iKAT task: checked as the organisers check it, then scored as a run."""
    from rich.console import Console

    from mtrbench.measures import parse_k_values, parse_measures  # deferred: loads pytrec_eval
    from mtrbench.measures.protocols import choose  # deferred: loads pytrec_eval
    from mtrbench.results.table import scores_table  # deferred: loads pytrec_eval

    if args.per_query or args.refined_qrels or args.generation_judgments:
        raise MtrbenchError("--per-query, --refined-qrels and --generation-judgments apply to --run")
    card = resolve_card(args.task)
    year = card_year(card)
    task = load_task(card, split=args.split, data_dir=args.data_dir, require_corpus=False)
    run, ikat = task_run(Path(args.predictions), card, task)
    checks = check_run(ikat, topic_turns(task), 2023 if card.format == "ikat-ptkb" else year, _path(args.passage_db))
    status = Console(stderr=True)
    status.print(
        f"iKAT run checks: {len(checks.errors)} errors, {len(checks.warnings)} warnings"
        + (f" (first: {(checks.errors or checks.warnings)[0]})" if checks.errors or checks.warnings else ""),
        soft_wrap=True,
        highlight=False,
        markup=False,
    )
    measures = parse_measures(
        (args.metrics or ",".join(card.metrics)).split(","),
        parse_k_values(args.k_values or ",".join(map(str, card.k_values))),
    )
    chosen = choose(args.protocol or "official", args.relevance_level, card)
    chosen.protocol.check(measures)
    qrels = task.qrels()
    if not qrels:
        raise MtrbenchError(f"task '{card.name}' ({task.split}) has no qrels to score against")
    source = f"task {card.name} ({task.split})"
    scored = score_run(args.predictions, source, chosen.protocol, qrels, run, measures, chosen.relevance_level)
    scores = scored.evaluation.scores()
    scores_table(scored.title(), scores, Console())
    if args.output:
        report = scored.report(scores, {})
        report["ikat_checks"] = {"errors": checks.errors, "warnings": len(checks.warnings)}
        atomic_write_text(args.output, json_text(report, path=args.output, indent=2) + "\n")
    return 0


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


_TABLE_FLAGS = (
    "measures",
    "baseline",
    "test",
    "unit",
    "alpha",
    "names",
    "format",
    "qrels",
    "task",
    "split",
    "relevance_level",
)


# Said on stderr whenever the unit was not chosen: docs/meta.md argues for conversations, the default is the query.
DEFAULT_UNIT_NOTE = (
    "note: paired unit: each query (the default); --unit conversation pairs each conversation's mean over its "
    "turns, whose turns are not independent (docs/meta.md)"
)


def _cmd_compare(args: argparse.Namespace) -> int:
    if (
        len(args.systems) == 2
        and all(s.lower().endswith(".json") for s in args.systems)
        and not args.all_pairs
        and all(getattr(args, f) is None for f in _TABLE_FLAGS)
    ):
        args.result_a, args.result_b = args.systems
        return _cmd_compare_two(args)
    if args.metrics is not None or args.tie_epsilon is not None:
        raise MtrbenchError(
            "--metrics and --tie-epsilon belong to the two-result comparison; the table takes --measures"
        )
    from rich.console import Console

    from mtrbench.analyses.compare_many import CompareOptions, compare_systems  # deferred: loads numpy
    from mtrbench.results.compare import load_system  # deferred: loads numpy
    from mtrbench.results.paper_table import format_for, print_table, render  # deferred: loads numpy

    fmt = format_for(args.output, args.format)
    if args.alpha is not None and not 0 < args.alpha < 1:
        raise MtrbenchError(f"--alpha must be between 0 and 1, got {args.alpha:g}")
    if args.split and not args.task:
        raise MtrbenchError("--split chooses the task's qrels: it needs --task")
    names = [n.strip() for n in args.names.split(",")] if args.names else None
    if names is not None and len(names) != len(args.systems):
        raise MtrbenchError(f"--names has {len(names)} names for {len(args.systems)} systems")
    measure_strings = [m.strip() for m in args.measures.split(",") if m.strip()] if args.measures else None
    source = JudgmentSource(args.qrels, args.task, args.split, args.relevance_level)
    judgments = run_judgments(args.systems, source, measure_strings)  # parses the measures: a typo fails here
    systems = named([load_system(path, judgments) for path in args.systems], names)
    keys, labels = measure_keys(measure_strings, args.systems[0], judgments)
    options = CompareOptions(
        measures=tuple(keys),
        baseline=None if args.all_pairs else baseline_index(args.baseline, systems),
        test=args.test or "t",
        unit=args.unit or "query",
        alpha=0.05 if args.alpha is None else args.alpha,
    )
    table = compare_systems(systems, options)
    if args.output:
        atomic_write_text(args.output, render(table, fmt, labels) if fmt != "table" else _plain(table, labels))
    elif fmt == "table":
        print_table(table, labels, Console())
    else:
        print(render(table, fmt, labels), end="")
    if args.output:
        print(f"{len(systems)} systems x {len(keys)} measure(s), {fmt}: {args.output}")
    if args.unit is None:
        print(DEFAULT_UNIT_NOTE, file=sys.stderr)
    return 0


def _plain(table, labels: dict[str, str]) -> str:
    """The terminal table as plain text, for --output with --format table."""
    import io

    from rich.console import Console

    from mtrbench.results.paper_table import print_table  # deferred: loads numpy

    console = Console(record=True, width=120, file=io.StringIO())
    print_table(table, labels, console)
    return console.export_text()


def _cmd_compare_two(args: argparse.Namespace) -> int:
    from rich.console import Console

    from mtrbench.results.compare import load_per_query  # deferred: loads numpy
    from mtrbench.results.table import print_titled  # deferred: loads pytrec_eval

    a_name, a = load_per_query(args.result_a)
    b_name, b = load_per_query(args.result_b)
    common, only = paired_queries(a, b)
    keys = compared_metrics(a, b, [m.strip() for m in (args.metrics or "").split(",") if m.strip()])
    epsilon = _tie_epsilon(args)
    report = paired_report(a, b, common, keys, epsilon)
    console = Console()
    title = f"B = {b_name} vs A = {a_name}: {len(common)} paired queries" + (
        f" ({only} not in both, left out)" if only else ""
    )
    print_titled(console, title + f"; win/tie/loss per query, tie = |B-A| <= {epsilon:g}", report.differences_table())
    print_titled(
        console,
        f"p-values, two-sided: paired t-test and randomization test; Holm-adjusted over the "
        f"{len(report.rows)} metric(s) of each test",
        report.p_values_table(),
    )
    if args.output:
        document = {
            "a": args.result_a,
            "b": args.result_b,
            "paired_queries": len(common),
            "unpaired_queries": only,
            "tie_epsilon": epsilon,
            "multiple_comparisons": "holm (per test, over the metrics)",
            "comparisons": report.comparisons(),
        }
        atomic_write_text(args.output, json_text(document, path=args.output, indent=2) + "\n")
    print(DEFAULT_UNIT_NOTE, file=sys.stderr)  # the detailed comparison always pairs queries
    return 0


def _tie_epsilon(args: argparse.Namespace) -> float:
    from mtrbench.analyses.significance import TIE_EPSILON  # deferred: loads numpy

    epsilon = TIE_EPSILON if args.tie_epsilon is None else args.tie_epsilon
    if epsilon < 0:
        raise MtrbenchError("--tie-epsilon must be >= 0")
    return epsilon


def _cmd_pool(args: argparse.Namespace) -> int:
    from rich.console import Console

    from mtrbench.analyses.pool import pool_analysis  # deferred: loads pytrec_eval
    from mtrbench.results.table import print_titled  # deferred: loads pytrec_eval

    names = [Path(r).name for r in args.runs]
    if len(set(names)) != len(names):
        names = [str(r) for r in args.runs]
    if args.output:
        ensure_parent(args.output)  # a bad --output fails before the runs are read and pooled
    original, refined = read_qrels(args.qrels), read_qrels(args.refined_qrels)
    check_refined_keeps_original(original, refined, args.qrels, args.refined_qrels)
    runs = dict(zip(names, (read_run(r) for r in args.runs)))
    result = pool_analysis(
        runs,
        original,
        refined,
        k=args.k,
        metric=args.metric,
        n_orders=args.orders,
        seed=args.seed,
    )
    console = Console()
    print_titled(
        console,
        f"pool growth over {len(names)} runs ({args.orders} orders, seed {args.seed}, k={args.k})",
        growth_table(result, len(names), args.metric, args.k),
    )
    print_titled(console, "marginal contribution, leave-one-out", contribution_table(result, args.metric, args.k))
    if args.output:
        atomic_write_text(args.output, json_text(result.as_dict(), path=args.output, indent=2) + "\n")
    return 0
