"""`mtrbench score`, `compare` and `pool`: analyses of TREC run and qrels files and of result files."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mtrbench.analyses.multiple import holm
from mtrbench.cli.common import analysis_options, print_analyses
from mtrbench.data import load_task, resolve_card
from mtrbench.formats.ikat_run import check_run
from mtrbench.formats.qrels import read_qrels
from mtrbench.formats.run import read_run
from mtrbench.infra.atomic import atomic_write_text, ensure_parent
from mtrbench.infra.errors import DataError, MtrbenchError
from mtrbench.infra.numeric import json_text
from mtrbench.results.ikat_out import card_year, task_run, topic_turns
from mtrbench.results.result import Result

if TYPE_CHECKING:
    from rich.table import Table

    from mtrbench.analyses.significance import PairedComparison
    from mtrbench.formats.qrels import Qrels
    from mtrbench.formats.run import Run
    from mtrbench.measures.base import Measure
    from mtrbench.measures.compute import Evaluation
    from mtrbench.measures.protocols import ScoringProtocol


def _cmd_score(args: argparse.Namespace) -> int:
    if args.predictions:
        return _cmd_score_predictions(args)
    args.protocol = args.protocol or "trec_eval"
    args.metrics = args.metrics or "ndcg,recall,mrr,map,precision,hit"
    args.k_values = args.k_values or "1,3,5,10,20,100"
    if not (args.qrels or args.task):
        raise MtrbenchError("score --run needs the qrels: --qrels FILE or --task NAME")
    from rich.console import Console

    from mtrbench.analyses.run import run_analyses  # deferred: loads pytrec_eval
    from mtrbench.measures import parse_k_values, parse_measures  # deferred: loads pytrec_eval
    from mtrbench.results.table import scores_table  # deferred: loads pytrec_eval

    if (args.split or args.data_dir) and not args.task:
        raise MtrbenchError("--split and --data-dir choose the task's qrels: they need --task")
    measures = parse_measures(args.metrics.split(","), parse_k_values(args.k_values))
    protocol = _protocol(args.protocol, args.task)
    protocol.check(measures)
    run = read_run(args.run)
    qrels_source, qrels, card_level = _score_qrels(args)
    relevance_level = card_level if args.relevance_level is None else args.relevance_level
    scored = _score_run(args.run, qrels_source, protocol, qrels, run, measures, relevance_level)
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


def _score_qrels(args: argparse.Namespace) -> tuple[str, dict[str, dict[str, int]], int]:
    """Where the qrels come from (shown and recorded), the qrels, and the relevance level they imply."""
    if args.task:
        return _task_qrels(args.task, args.split, args.data_dir)
    return str(args.qrels), read_qrels(args.qrels), 1


@dataclass
class _ScoredRun:
    """A run scored against qrels, with the queries the scores leave out (counted in the title and the file)."""

    run_path: str
    qrels_source: str
    protocol: ScoringProtocol
    evaluation: Evaluation
    unjudged_run_queries: list[str]  # in the run, without qrels: ignored
    judged_without_run: list[str]  # judged, not answered by the run: scored 0
    skipped: list[str]  # judged, absent from the run, left out by the protocol (MTRAG)

    def title(self) -> str:
        evaluation = self.evaluation
        return (
            f"{Path(self.run_path).name}: {len(evaluation.per_query)} queries evaluated, "
            f"{len(evaluation.excluded)} without positives excluded, "
            f"{len(self.unjudged_run_queries)} run queries without qrels ignored"
            + (
                f", {len(self.judged_without_run)} judged queries absent from the run (scored 0)"
                if self.judged_without_run
                else ""
            )
            + (f", {len(self.skipped)} judged queries absent from the run skipped" if self.skipped else "")
            + (f" · protocol {self.protocol.setting}" if self.protocol.is_official else "")
        )

    def report(self, scores: dict[str, float], analyses: dict) -> dict:
        """The --output JSON."""
        from mtrbench.analyses.report import confidence_intervals  # deferred: loads pytrec_eval

        evaluation = self.evaluation
        return {
            "run": str(self.run_path),
            "qrels": self.qrels_source,
            "relevance_level": evaluation.relevance_level,
            "protocol": self.protocol.setting,
            "measures": {key: str(m) for key, m in evaluation.measures.items()},
            "scores": scores,
            "confidence_intervals": confidence_intervals(evaluation, evaluation.metric_keys),
            "queries": {
                "evaluated": len(evaluation.per_query),
                "excluded_without_positives": len(evaluation.excluded),
                "run_queries_without_qrels": len(self.unjudged_run_queries),
                "judged_without_run": len(self.judged_without_run),
                "judged_skipped": len(self.skipped),
            },
            **analyses,
            "per_query": evaluation.per_query,
        }


def _score_run(
    run_path: str,
    qrels_source: str,
    protocol: ScoringProtocol,
    qrels: Qrels,
    run: Run,
    measures: list[Measure],
    relevance_level: int,
) -> _ScoredRun:
    from mtrbench.measures.protocols import RoundedEvaluation  # deferred: loads pytrec_eval

    unjudged_run_queries = sorted(set(run) - set(qrels))
    evaluation = protocol.score(qrels, run, measures, relevance_level)
    skipped = evaluation.skipped if isinstance(evaluation, RoundedEvaluation) else []  # MTRAG: absent from the run
    # Judged queries the run does not answer score 0 (as they should), but say how many: often a wrong file.
    judged_without_run = sorted(set(evaluation.per_query) - set(run))
    if len(judged_without_run) == len(evaluation.per_query):
        raise MtrbenchError(
            f"run {run_path} has none of the {len(judged_without_run)} judged queries of "
            f"{qrels_source}: are they of the same task?"
        )
    return _ScoredRun(run_path, qrels_source, protocol, evaluation, unjudged_run_queries, judged_without_run, skipped)


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
        1 if args.relevance_level is None else args.relevance_level,
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
    protocol = _protocol(args.protocol or "official", args.task)
    protocol.check(measures)
    qrels = task.qrels()
    if not qrels:
        raise MtrbenchError(f"task '{card.name}' ({task.split}) has no qrels to score against")
    level = card.relevance_level if args.relevance_level is None else args.relevance_level
    scored = _score_run(args.predictions, f"task {card.name} ({task.split})", protocol, qrels, run, measures, level)
    scores = scored.evaluation.scores()
    scores_table(scored.title(), scores, Console())
    if args.output:
        report = scored.report(scores, {})
        report["ikat_checks"] = {"errors": checks.errors, "warnings": len(checks.warnings)}
        atomic_write_text(args.output, json_text(report, path=args.output, indent=2) + "\n")
    return 0


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def _protocol(choice: str, task: str | None) -> ScoringProtocol:
    """score's protocol: ``official`` takes its benchmark from --task's card, ``official:<benchmark>`` names it."""
    from mtrbench.measures.protocols import OFFICIAL, for_run, resolve  # deferred: loads pytrec_eval

    if choice != OFFICIAL or not task:
        return for_run(choice)
    card = resolve_card(task)
    return resolve(OFFICIAL, card.official_protocol, card.protocol, card.name)


def _task_qrels(task: str, split: str | None, data_dir: str | None) -> tuple[str, dict[str, dict[str, int]], int]:
    """(where the qrels came from, the qrels, the card's relevance level) of one split of a task."""
    card = resolve_card(task)
    data = load_task(card, split=split, data_dir=data_dir, require_corpus=False)
    qrels = data.qrels()
    if not qrels:
        raise MtrbenchError(f"task '{card.name}' ({data.split}) has no qrels to score against")
    return f"task {card.name} ({data.split})", qrels, card.relevance_level


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
    judgments = _run_judgments(args, measure_strings)  # parses the measures: a typo fails before any file is read
    systems = [load_system(path, judgments) for path in args.systems]
    systems = _named(systems, names)
    keys, labels = _measure_keys(measure_strings, args.systems[0], judgments)
    options = CompareOptions(
        measures=tuple(keys),
        baseline=None if args.all_pairs else _baseline(args.baseline, systems),
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


def _run_judgments(args: argparse.Namespace, measure_strings: list[str] | None):
    """Qrels and measures for systems given as TREC runs; None when every system is a JSON result."""
    from mtrbench.measures import parse_measures  # deferred: loads pytrec_eval
    from mtrbench.results.compare import RunJudgments  # deferred: loads numpy

    measures = parse_measures(measure_strings or ["nDCG@10"], [])
    runs = [s for s in args.systems if not s.lower().endswith(".json")]
    if not (args.qrels or args.task):
        if args.relevance_level is not None:
            raise MtrbenchError("--relevance-level applies to TREC runs scored with --qrels or --task")
        if runs:
            raise MtrbenchError(f"{runs[0]} is a TREC run (not a .json result): give --qrels FILE or --task NAME")
        return None
    if args.task:
        card = resolve_card(args.task)
        task = load_task(card, split=args.split, require_corpus=False)
        qrels, level = task.qrels(), card.relevance_level
        conversations = {q.qid: q.conversation_id for q in task.queries}
    else:
        qrels, level, conversations = read_qrels(args.qrels), 1, {}
    level = level if args.relevance_level is None else args.relevance_level
    return RunJudgments(qrels, level, measures, conversations)


def _measure_keys(measure_strings: list[str] | None, first: str, judgments) -> tuple[list[str], dict[str, str]]:
    """Per-query keys of the measures asked for, and their printed names."""
    from mtrbench.measures import label, parse_measures  # deferred: loads pytrec_eval

    level = judgments.relevance_level if judgments is not None else 1
    if measure_strings is None:
        if judgments is not None:
            measures = judgments.measures
        else:
            key = Result.load(first).main_score_key
            return [key], {key: label(key)}
    else:
        measures = parse_measures(measure_strings, [])
    keys = [m.key(level) for m in measures]
    return keys, {k: str(m) for k, m in zip(keys, measures)}


def _named(systems: list, names: list[str] | None) -> list:
    """--names, else each system's own name; for results of one model, the history alone."""
    import dataclasses
    import re

    if names is not None:
        return [dataclasses.replace(s, name=n) for s, n in zip(systems, names)]
    parts = [re.fullmatch(r"(.*) \((.*)\)", s.name) for s in systems]
    if all(parts) and len({p.group(1) for p in parts}) == 1 and len({p.group(2) for p in parts}) == len(parts):
        return [dataclasses.replace(s, name=p.group(2)) for s, p in zip(systems, parts)]
    return systems


def _baseline(choice: str | None, systems: list) -> int:
    from string import ascii_lowercase

    if choice is None:
        return 0
    names = [s.name for s in systems]
    if choice in names:
        return names.index(choice)
    if choice.isdigit() and 1 <= int(choice) <= len(systems):
        return int(choice) - 1
    if len(choice) == 1 and choice in ascii_lowercase[: len(systems)]:
        return ascii_lowercase.index(choice)
    raise MtrbenchError(
        f"--baseline {choice}: not a system's letter (a-{ascii_lowercase[len(systems) - 1]}), "
        f"position (1-{len(systems)}) or name ({', '.join(names)})"
    )


def _cmd_compare_two(args: argparse.Namespace) -> int:
    from rich.console import Console

    from mtrbench.analyses.significance import compare_paired  # deferred: loads numpy
    from mtrbench.results.compare import load_per_query  # deferred: loads numpy
    from mtrbench.results.table import print_titled  # deferred: loads pytrec_eval

    a_name, a = load_per_query(args.result_a)
    b_name, b = load_per_query(args.result_b)
    common = sorted(set(a) & set(b))
    if not common:
        raise MtrbenchError("the two results share no evaluated query: are they the same task and split?")
    only = len(set(a) ^ set(b))
    keys = _compared_metrics(args, a, b)
    epsilon = _tie_epsilon(args)
    rows = [
        compare_paired(key, [a[q][key] for q in common], [b[q][key] for q in common], tie_epsilon=epsilon)
        for key in keys
    ]
    # Each test is its own family: Holm over the t-test p-values of every metric shown, and over the
    # randomization p-values.
    t_holm = holm([r.t_p_value for r in rows])
    rand_holm = holm([r.randomization_p_value for r in rows])
    console = Console()
    title = f"B = {b_name} vs A = {a_name}: {len(common)} paired queries" + (
        f" ({only} not in both, left out)" if only else ""
    )
    print_titled(console, title + f"; win/tie/loss per query, tie = |B-A| <= {epsilon:g}", _differences_table(rows))
    print_titled(
        console,
        f"p-values, two-sided: paired t-test and randomization test; Holm-adjusted over the "
        f"{len(rows)} metric(s) of each test",
        _p_values_table(rows, t_holm, rand_holm),
    )
    if args.output:
        comparisons = [
            {**r.as_dict(), "t_p_value_holm": th, "randomization_p_value_holm": rh}
            for r, th, rh in zip(rows, t_holm, rand_holm)
        ]
        report = {
            "a": args.result_a,
            "b": args.result_b,
            "paired_queries": len(common),
            "unpaired_queries": only,
            "tie_epsilon": epsilon,
            "multiple_comparisons": "holm (per test, over the metrics)",
            "comparisons": comparisons,
        }
        atomic_write_text(args.output, json_text(report, path=args.output, indent=2) + "\n")
    print(DEFAULT_UNIT_NOTE, file=sys.stderr)  # the detailed comparison always pairs queries
    return 0


def _compared_metrics(
    args: argparse.Namespace, a: dict[str, dict[str, float]], b: dict[str, dict[str, float]]
) -> list[str]:
    """--metrics, each checked to be in both per-query files; else every metric both have (A's order)."""
    keys = [k for k in next(iter(a.values())) if k in next(iter(b.values()))]
    if not args.metrics:
        return keys
    wanted = [m.strip() for m in args.metrics.split(",") if m.strip()]
    missing = [m for m in wanted if m not in keys]
    if missing:
        raise MtrbenchError(f"metric(s) {missing} not in both per-query files; available: {', '.join(keys)}")
    return wanted


def _tie_epsilon(args: argparse.Namespace) -> float:
    from mtrbench.analyses.significance import TIE_EPSILON  # deferred: loads numpy

    epsilon = TIE_EPSILON if args.tie_epsilon is None else args.tie_epsilon
    if epsilon < 0:
        raise MtrbenchError("--tie-epsilon must be >= 0")
    return epsilon


def _differences_table(rows: list[PairedComparison]) -> Table:
    """Means of A and B, their difference with its CI, the effect size and the per-query win/tie/loss."""
    from mtrbench.measures import label as pretty_name  # deferred: loads pytrec_eval
    from mtrbench.results.table import compact_table  # deferred: loads pytrec_eval

    table = compact_table()
    for column in ("metric", "A", "B", "B-A", "CI95(B-A)", "d", "B win/tie/loss"):
        table.add_column(column, justify="right", no_wrap=True)
    for r in rows:
        table.add_row(
            pretty_name(r.metric),
            f"{r.mean_a:.4f}",
            f"{r.mean_b:.4f}",
            f"{r.diff:+.4f}",
            f"{r.diff_ci95[0]:+.3f},{r.diff_ci95[1]:+.3f}",
            "-" if r.effect_size is None else f"{r.effect_size:+.2f}",
            f"{r.wins}/{r.ties}/{r.losses}",
        )
    return table


def _p_values_table(rows: list[PairedComparison], t_holm: list[float | None], rand_holm: list[float | None]) -> Table:
    from mtrbench.measures import label as pretty_name  # deferred: loads pytrec_eval
    from mtrbench.results.table import compact_table  # deferred: loads pytrec_eval

    def p_text(p: float | None) -> str:
        return "-" if p is None else f"{p:.3g}"

    table = compact_table()
    for column in ("metric", "p(t)", "p(t) Holm", "p(rand)", "p(rand) Holm"):
        table.add_column(column, justify="right", no_wrap=True)
    for r, th, rh in zip(rows, t_holm, rand_holm):
        table.add_row(
            pretty_name(r.metric), p_text(r.t_p_value), p_text(th), p_text(r.randomization_p_value), p_text(rh)
        )
    return table


def _check_refined_keeps_original(
    original: dict[str, dict[str, int]], refined: dict[str, dict[str, int]], original_path: str, refined_path: str
) -> None:
    """pool reads the refined qrels as the original ones plus newly judged documents (DREAM's D_S: O plus the refined
    labels of what S pooled). A file that drops original judgments (another judgment set, a subset of the queries)
    would give growth rates that describe neither, with nothing shown: refused, not warned about."""
    dropped = [(q, d) for q, docs in original.items() for d in docs if d not in refined.get(q, {})]
    if dropped:
        query, doc = dropped[0]
        raise DataError(
            f"{refined_path}: the refined qrels drop {len(dropped)} judgment(s) of {original_path} (first: query "
            f"{query}, document {doc}); refined qrels must keep every original judgment and add the new ones"
        )


def _cmd_pool(args: argparse.Namespace) -> int:
    from rich.console import Console

    from mtrbench.analyses.pool import pool_analysis  # deferred: loads pytrec_eval
    from mtrbench.results.table import compact_table, print_titled  # deferred: loads pytrec_eval

    names = [Path(r).name for r in args.runs]
    if len(set(names)) != len(names):
        names = [str(r) for r in args.runs]
    if args.output:
        ensure_parent(args.output)  # a bad --output fails before the runs are read and pooled
    original, refined = read_qrels(args.qrels), read_qrels(args.refined_qrels)
    _check_refined_keeps_original(original, refined, args.qrels, args.refined_qrels)
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
    table = compact_table()
    for column in ("pool size m", "holes found", "growth rate GR(m)", f"MC(m) {args.metric}@{args.k}"):
        table.add_column(column, justify="right")
    for m in range(1, len(names) + 1):
        gr = result.growth_rate[m - 1]
        mc = result.marginal_contribution_by_size[m - 1] if m - 1 < len(result.marginal_contribution_by_size) else None
        table.add_row(
            str(m),
            f"{result.holes_per_size[m - 1]:.1f}",
            "-" if gr is None else f"{gr:.4f}",
            "-" if mc is None else f"{mc:.4f}",
        )
    print_titled(
        console, f"pool growth over {len(names)} runs ({args.orders} orders, seed {args.seed}, k={args.k})", table
    )
    table = compact_table()
    table.add_column("run")
    table.add_column(f"MC {args.metric}@{args.k}", justify="right")
    for name, value in result.marginal_contribution.items():
        table.add_row(name, f"{value:.4f}")
    print_titled(console, "marginal contribution, leave-one-out", table)
    if args.output:
        atomic_write_text(args.output, json_text(result.as_dict(), path=args.output, indent=2) + "\n")
    return 0
