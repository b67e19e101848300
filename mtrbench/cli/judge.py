"""`mtrbench judge`: score generated answers (reference measures, LLM judges, RAGAlign) and RAD-Bench."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from mtrbench.cli import judge_mtrag, judge_nuggets
from mtrbench.cli.llm_flags import cache_from_args, check_failure_rates, judges_from_args
from mtrbench.data import load_task, resolve_card
from mtrbench.data.loaders.rad_bench import load_rad_bench
from mtrbench.formats.generations import read_generations
from mtrbench.formats.run import read_run
from mtrbench.infra.atomic import atomic_write_text, check_file_target, check_folder_target
from mtrbench.infra.errors import MtrbenchError
from mtrbench.infra.numeric import json_text
from mtrbench.judge.run_summary import print_run_summary
from mtrbench.judge.table import rad_bench_tables
from mtrbench.llm.failure_rate import JudgeFailures, most_common
from mtrbench.results.writer import safe_name

if TYPE_CHECKING:
    from mtrbench.judge.api import JudgeOutcome
    from mtrbench.llm.config import JudgeConfig


def _cmd_judge(args: argparse.Namespace) -> int:
    if args.judge_action == "run":
        return _cmd_run(args)
    if args.judge_action == "rad-bench":
        return _cmd_rad_bench(args)
    if args.judge_action == "mtrag":
        return judge_mtrag.run(args)
    if args.judge_action == "nuggets":
        return judge_nuggets.run(args)
    args.judge_parser.print_help()
    return 0


def _single_judge(args: argparse.Namespace):
    judges = judges_from_args(args)
    if len(judges) != 1:
        raise MtrbenchError(f"judge takes one LLM judge; the judges file lists {len(judges)}")
    return judges[0]


def _cmd_run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from mtrbench.judge.api import (  # deferred: loads pytrec_eval
        JudgeOptions,
        judge_generations,
        ragalign_from_verdicts,
        run_from_generations,
    )
    from mtrbench.judge.human import check_human_labels, judge_ppi  # deferred: loads numpy
    from mtrbench.judge.report import print_per_turn, write_scores  # deferred: loads rich
    from mtrbench.judge.scoring import generation_measures, score_generations  # deferred: loads pytrec_eval
    from mtrbench.measures import parse_measures  # deferred: loads pytrec_eval

    if args.ragalign and args.judge != "verdict":
        raise MtrbenchError("--ragalign needs --judge verdict (RAGAlign pairs retrieval with binary verdicts)")
    if args.run_file and not args.ragalign:
        raise MtrbenchError("--run is used by --ragalign only")
    if args.human_labels:
        check_human_labels(args.human_labels, args.judge)  # a bad file fails before the judge is asked
    measure_texts = [m for m in args.measures.split(",") if m.strip()]
    if not measure_texts and not args.judge:
        raise MtrbenchError("nothing to do: --measures is empty and no --judge asked")
    measures = generation_measures(measure_texts) if measure_texts else []
    ragalign = parse_measures(args.ragalign.split(","), [10]) if args.ragalign else []
    judge = _single_judge(args) if args.judge else None
    _check_outputs(args.output, args.output_dir if args.judge or not args.output else None)
    generations = read_generations(args.generations)  # a bad file fails before the task is loaded

    console = Console()
    card = resolve_card(args.task)
    task = load_task(
        card, split=args.split, data_dir=args.data_dir, corpus_path=args.corpus, require_corpus=bool(args.judge)
    )
    output_dir = Path(args.output_dir) if args.output_dir else Path("results") / "judge" / safe_name(task.name)
    scores = score_generations(generations, task, measures, card.relevance_level) if measures else None
    outcome = None
    if judge is not None:
        options = JudgeOptions(
            mode=args.judge,
            scenario=args.scenario,
            output_dir=output_dir,
            max_passage_chars=args.max_passage_chars or None,
            dry_run=args.dry_run,
            yes=args.yes,
            show_progress=not args.quiet,
            human_labels=args.human_labels,
        )
        outcome = judge_generations(
            generations, task, judge, options, cache=None if args.dry_run else cache_from_args(args)
        )
        if outcome is None:
            return 0
    exit_code = check_failure_rates(args, [_failures(judge, outcome)] if outcome is not None else [])
    alignment = None
    if ragalign and outcome is not None and exit_code == 0:  # past the limit the verdicts cannot carry RAGAlign
        run = read_run(args.run_file) if args.run_file else run_from_generations(generations)
        alignment = ragalign_from_verdicts(
            outcome.verdicts or {}, task, run, ragalign, card.relevance_level, qids=list(generations)
        )
    ppi = judge_ppi(outcome.run.turns, outcome.run.mode, args.human_labels) if args.human_labels and outcome else None
    output = Path(args.output) if args.output else output_dir / "scores.json"
    write_scores(output, task, args.generations, scores, outcome, alignment, args.argv, ppi.as_dict() if ppi else None)
    if not args.quiet:
        print_per_turn(console, task.name, scores, outcome)
    print_run_summary(console, scores, outcome, alignment)
    if ppi is not None:
        console.print(ppi.describe(), soft_wrap=True)
    console.print(f"[dim]results: {output}[/dim]", soft_wrap=True)
    return exit_code


def _failures(judge: JudgeConfig, outcome: JudgeOutcome) -> JudgeFailures:
    """The judge's failed/total count and most common reason, for --max-failure-rate."""
    failures = outcome.failures
    return JudgeFailures(judge.name, len(failures), len(outcome.run.turns), most_common([f["error"] for f in failures]))


def _check_outputs(output: str | None, output_dir: str | None) -> None:
    """A folder given for --output, or a file for --output-dir (or above either): one line before any request;
    nothing is created here (a dry run leaves no folder behind)."""
    if output:
        check_file_target(output)
    if output_dir:
        check_folder_target(output_dir)


def _cmd_rad_bench(args: argparse.Namespace) -> int:

    from rich.console import Console

    from mtrbench.judge.report import print_rad_table  # deferred: loads rich

    console = Console()
    if args.judgments:
        if not args.output:
            raise MtrbenchError("--output FILE.json is needed with --judgments")
        if args.models or args.output_dir:
            raise MtrbenchError("--models and --output-dir apply to --answers")
        check_file_target(args.output)
        tables = rad_bench_tables(args.judgments, drop_unparsable=args.drop_unparsable)
        payload = {
            "judgments": str(args.judgments),
            "aggregation": "RAD-Bench Table 2: per model and category, "
            "the mean over turns of the per-turn mean rating; average = mean of the categories",
            "tables": [t.as_dict() for t in tables],
        }
        atomic_write_text(Path(args.output), json_text(payload, path=args.output, indent=2, ensure_ascii=False) + "\n")
        for t in tables:
            print_rad_table(console, f"RAD-Bench · {t.source}", t.table)
            if t.unparsable:
                kept = "averaged as -1" if t.unparsable_kept else "left out"
                console.print(f"[yellow]note:[/yellow] {sum(t.unparsable.values())} unparsable rating(s) ({kept})")
        console.print(f"[dim]table: {args.output}[/dim]", soft_wrap=True)
        return 0

    from mtrbench.judge.api import JudgeOptions, judge_rad_bench_answers  # deferred: loads pytrec_eval

    if args.drop_unparsable:
        raise MtrbenchError("--drop-unparsable applies to --judgments (mtrbench's own judging never scores a failure)")
    judge = _single_judge(args)
    _check_outputs(args.output, args.output_dir)
    bench = load_rad_bench(args.answers)
    output_dir = Path(args.output_dir) if args.output_dir else Path("results") / "judge" / "rad-bench"
    options = JudgeOptions(
        mode="rating",
        output_dir=output_dir,
        max_passage_chars=args.max_passage_chars or None,
        dry_run=args.dry_run,
        yes=args.yes,
        show_progress=not args.quiet,
    )
    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
    outcome = judge_rad_bench_answers(
        bench, judge, options, models=models, cache=None if args.dry_run else cache_from_args(args)
    )
    if outcome is None:
        return 0
    output = Path(args.output) if args.output else output_dir / "table.json"
    atomic_write_text(
        output,
        json_text({"table": outcome.table, "summary": outcome.summary}, path=output, indent=2, ensure_ascii=False)
        + "\n",
    )
    print_rad_table(console, f"RAD-Bench · judged by {judge.name}", outcome.table or {})
    if outcome.failures:
        console.print(
            f"[yellow]warning:[/yellow] {len(outcome.failures)} turn(s) failed after retries and are not "
            f"scored: " + ", ".join(f["key"] for f in outcome.failures[:10]),
            soft_wrap=True,
        )
    for note, count in outcome.notes.items():
        console.print(f"[yellow]note:[/yellow] {count} {note}", soft_wrap=True)
    console.print(
        f"[dim]table: {output}; RAD-Bench-layout judgments: {outcome.files['rad_judgments']}[/dim]", soft_wrap=True
    )
    return check_failure_rates(args, [_failures(judge, outcome)])
