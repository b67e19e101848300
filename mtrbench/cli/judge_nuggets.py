"""`mtrbench judge nuggets`: nugget evaluation (TREC RAG 2024/2025, TREC iKAT 2024) of generated answers, or of
existing nuggetizer assignment files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mtrbench import __version__
from mtrbench.cli.common import add_data_options
from mtrbench.cli.llm_flags import add_llm_arguments
from mtrbench.data import load_task, resolve_card
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import MtrbenchError
from mtrbench.judge.nuggets.aggregate import RunScores
from mtrbench.judge.nuggets.ikat import DEFAULT_VITAL_GRADE, read_ikat_responses
from mtrbench.judge.nuggets.score_files import AssignmentChecks, read_runs, score_runs
from mtrbench.judge.nuggets.scores import SCORE_NAMES
from mtrbench.judge.nuggets.sources import FORMATS, read_nuggets


def add_parser(actions: argparse._SubParsersAction) -> None:
    n = actions.add_parser(
        "nuggets",
        help="nugget evaluation (TREC RAG, iKAT): strict_vital, vital, strict_all, all per answer, turn and run",
        description="`judge nuggets GENERATIONS... --task T`: create nuggets from each turn's judged relevant "
        "passages with an LLM (or take --nuggets FILE), label each answer's support of each nugget, and score "
        "strict_vital, vital, strict_all and all (nuggetizer's definitions) per answer, turn position, topic "
        "switch, conversation and run; assignments are written in nuggetizer's format, one file per run. "
        "`judge nuggets --assignments FILE...`: score existing assignment files, no LLM.",
    )
    n.add_argument("generations", nargs="*", help="generations JSONL files, one per run (system)")
    n.add_argument(
        "--task",
        help="task name, card YAML or data folder (needed with GENERATIONS; with "
        "--assignments it adds the per-turn breakdowns and checks the turns)",
    )
    add_data_options(n)
    n.add_argument("--assignments", nargs="+", metavar="FILE", help="nuggetizer assignment JSONL files, one per run")
    n.add_argument(
        "--nuggets",
        metavar="FILE",
        help="nuggets: nuggetizer JSONL or iKAT 2024 gold nugget JSON [with GENERATIONS: created by the LLM]",
    )
    n.add_argument("--nuggets-format", choices=FORMATS, default="auto", help="layout of --nuggets [auto]")
    n.add_argument(
        "--vital-grade",
        type=int,
        default=DEFAULT_VITAL_GRADE,
        help=f"iKAT gold nuggets graded this or higher are vital, the others okay [{DEFAULT_VITAL_GRADE}]",
    )
    n.add_argument(
        "--responses",
        metavar="FILE",
        help="with --assignments: iKAT participant responses JSON; every assigned answer must be one of them",
    )
    n.add_argument("--output", help="scores JSON [with GENERATIONS: <output-dir>/scores.json]")
    n.add_argument("--quiet", action="store_true", help="no progress bars")
    add_llm_arguments(n)


def run(args: argparse.Namespace) -> int:
    if args.assignments:
        if args.generations:
            raise MtrbenchError("give GENERATIONS (judged by an LLM) or --assignments FILE... (scored), not both")
        return _score_assignments(args)
    raise MtrbenchError("nothing to score: give GENERATIONS with --task T, or --assignments FILE...")


def _score_assignments(args: argparse.Namespace) -> int:
    nuggets = read_nuggets(args.nuggets, args.nuggets_format, args.vital_grade) if args.nuggets else None
    responses = read_ikat_responses(args.responses) if args.responses else None
    task = None
    if args.task:
        task = load_task(resolve_card(args.task), split=args.split, data_dir=args.data_dir, corpus_path=args.corpus)
    checks = AssignmentChecks(
        nuggets=nuggets,
        nugget_source=str(args.nuggets or ""),
        responses=responses,
        response_source=str(args.responses or ""),
        task_qids={q.qid for q in task.queries} if task is not None else None,
        task_name=task.name if task is not None else "",
    )
    runs = read_runs(args.assignments, checks)
    scores = score_runs(runs, task.queries if task is not None else ())
    print_scores(scores)
    if args.output:
        files = {run.run_id: str(run.path) for run in runs}
        write_scores(Path(args.output), scores, args, files)
        print(f"results: {args.output}")
    return 0


def print_scores(scores: list[RunScores]) -> None:
    from rich.console import Console  # deferred: loads rich
    from rich.table import Table

    table = Table(title="nugget scores (mean over answers)")
    table.add_column("run")
    table.add_column("answers", justify="right")
    for name in SCORE_NAMES:
        table.add_column(name, justify="right")
    for run_scores in scores:
        means = run_scores.scores
        table.add_row(run_scores.run_id, str(means["n"]), *(f"{means[name]:.4f}" for name in SCORE_NAMES))
    Console().print(table)


def write_scores(path: Path, scores: list[RunScores], args: argparse.Namespace, files: dict[str, str]) -> None:
    document = {
        "mtrbench_version": __version__,
        "command": getattr(args, "argv", None),
        "task": args.task,
        "nuggets": args.nuggets,
        "runs": {s.run_id: {"file": files.get(s.run_id), **s.to_json()} for s in scores},
    }
    atomic_write_text(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
