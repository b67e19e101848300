"""`mtrbench judge nuggets` once parsed: scoring assignment files, or judging generations with an LLM (kept apart
from the parser, which must not load the scoring's dependencies)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from mtrbench import __version__
from mtrbench.cli.llm_flags import cache_from_args, check_failure_rates, judges_from_args
from mtrbench.data import load_task, resolve_card
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import MtrbenchError
from mtrbench.infra.numeric import json_text
from mtrbench.judge.nuggets.aggregate import RunScores
from mtrbench.judge.nuggets.assignment_file import RunAssignments
from mtrbench.judge.nuggets.citations import AnswerSupport, run_support
from mtrbench.judge.nuggets.create import CreationSettings
from mtrbench.judge.nuggets.human import NuggetPPI, check_same_nuggets, nugget_ppi, read_human_runs
from mtrbench.judge.nuggets.ikat import read_ikat_responses
from mtrbench.judge.nuggets.run import ASSIGNMENTS_DIR, NuggetJudgement, NuggetJudgeOptions, judge_nuggets
from mtrbench.judge.nuggets.score_files import AssignmentChecks, read_runs, score_runs
from mtrbench.judge.nuggets.scores import SCORE_NAMES
from mtrbench.judge.nuggets.sources import read_nuggets
from mtrbench.results.writer import safe_name


def run(args: argparse.Namespace) -> int:
    if args.assignments:
        if args.generations:
            raise MtrbenchError("give GENERATIONS (judged by an LLM) or --assignments FILE... (scored), not both")
        return _score_assignments(args)
    if not args.generations:
        raise MtrbenchError("nothing to score: give GENERATIONS with --task T, or --assignments FILE...")
    if not args.task:
        raise MtrbenchError("GENERATIONS need --task T: its judged relevant passages and its turns")
    if args.responses:
        raise MtrbenchError("--responses applies to --assignments")
    return _judge_generations(args)


def _judge_generations(args: argparse.Namespace) -> int:
    judge = judges_from_args(args)
    if len(judge) != 1:
        raise MtrbenchError(f"judge nuggets takes one LLM judge; the judges file lists {len(judge)}")
    given = read_nuggets(args.nuggets, args.nuggets_format, args.vital_grade) if args.nuggets else None
    card = resolve_card(args.task)
    task = load_task(card, split=args.split, data_dir=args.data_dir, corpus_path=args.corpus, require_corpus=True)
    output_dir = Path(args.output_dir) if args.output_dir else Path("results/judge/nuggets") / safe_name(task.name)
    options = NuggetJudgeOptions(
        output_dir=output_dir,
        creation=CreationSettings(args.max_nuggets, args.passage_batch, args.label_batch, card.relevance_level),
        assign_batch=args.assign_batch,
        max_passage_chars=args.max_passage_chars or None,
        citations=args.citations,
        dry_run=args.dry_run,
        yes=args.yes,
        show_progress=not args.quiet,
    )
    cache = None if args.dry_run else cache_from_args(args)
    outcome = judge_nuggets(
        args.generations,
        task,
        judge[0],
        options,
        cache=cache,
        given=given,
        given_source=str(args.nuggets or ""),
        human_labels=args.human_labels or (),
    )
    if outcome is None:
        return 0
    print_scores(outcome.scores)
    ppi = nugget_ppi(outcome.scores, outcome.human) if args.human_labels else []
    print_ppi(ppi)
    if outcome.support is not None:
        print_support(outcome.support)
    output = Path(args.output) if args.output else output_dir / "scores.json"
    files = {run_id: str(path) for run_id, path in outcome.assignment_paths.items()}
    write_scores(output, outcome.scores, args, files, outcome, ppi)
    if outcome.nuggets_path is not None:
        print(f"nuggets: {outcome.nuggets_path}")
    print(f"assignments: {output_dir / ASSIGNMENTS_DIR}\nresults: {output}")
    return check_failure_rates(args, outcome.failures)


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
    human: dict[str, RunAssignments] = {}
    if args.human_labels:
        human = read_human_runs(args.human_labels, {run.run_id: set(run.answers) for run in runs}, checks)
        assigned = {run.run_id: {q: [n.text for n in a.nuggets] for q, a in run.answers.items()} for run in runs}
        check_same_nuggets(human, assigned)
    scores = score_runs(runs, task.queries if task is not None else ())
    print_scores(scores)
    ppi = nugget_ppi(scores, human) if human else []
    print_ppi(ppi)
    if args.output:
        files = {run.run_id: str(run.path) for run in runs}
        write_scores(Path(args.output), scores, args, files, ppi=ppi)
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


def print_ppi(estimates: Sequence[NuggetPPI]) -> None:
    """One table per run with human labels: each score by the LLM alone, by PPI and by the people alone."""
    from rich.console import Console  # deferred: loads rich
    from rich.table import Table

    for run in estimates:
        some = next(iter(run.estimates.values()))
        table = Table(
            title=f"{run.run_id}: {some.labelled} of {some.items} answers labelled by people (PPI, {some.confidence:.0%})"
        )
        for column in ("score", "LLM", "PPI", "PPI interval", "humans", "humans interval"):
            table.add_column(column, justify="left" if column == "score" else "right", no_wrap=True)
        for name, e in run.estimates.items():
            table.add_row(
                name,
                f"{e.llm_mean:.3f}",
                f"{e.ppi_mean:.3f}",
                f"[{e.ppi_low:.3f}, {e.ppi_high:.3f}]",
                f"{e.human_mean:.3f}",
                f"[{e.human_low:.3f}, {e.human_high:.3f}]",
            )
        Console().print(table)


def print_support(support: dict[str, dict[str, AnswerSupport | None]]) -> None:
    from rich.console import Console  # deferred: loads rich
    from rich.table import Table

    table = Table(title="citation support (TREC RAG 2024 weights: full 1, partial 0.5, none 0)")
    for column in ("run", "answers", "citations", "precision", "recall", "incomplete"):
        table.add_column(column, justify="left" if column == "run" else "right")
    for run_id, per_answer in support.items():
        means = run_support(per_answer)
        shown = [f"{v:.4f}" if isinstance(v, float) else "-" for v in (means["precision"], means["recall"])]
        table.add_row(run_id, str(means["answers"]), str(means["pairs"]), *shown, str(means["incomplete"]))
    Console().print(table)


def write_scores(
    path: Path,
    scores: list[RunScores],
    args: argparse.Namespace,
    files: dict[str, str],
    outcome: NuggetJudgement | None = None,
    ppi: Sequence[NuggetPPI] = (),
) -> None:
    runs: dict[str, dict[str, object]] = {s.run_id: {"file": files.get(s.run_id), **s.to_json()} for s in scores}
    for estimate in ppi:  # only with --human-labels, so that the file is unchanged without it
        runs[estimate.run_id]["ppi"] = estimate.as_dict()
    if outcome is not None and outcome.support is not None:
        for run_id, per_answer in outcome.support.items():
            runs[run_id]["citation_support"] = {
                **run_support(per_answer),
                "per_answer": {qid: _support_json(s) for qid, s in per_answer.items()},
            }
    document: dict[str, object] = {
        "mtrbench_version": __version__,
        "command": getattr(args, "argv", None),
        "task": args.task,
        "nuggets": args.nuggets or (str(outcome.nuggets_path) if outcome and outcome.nuggets_path else None),
        "runs": runs,
    }
    if outcome is not None:
        document["llm"] = {"log": str(outcome.log_path), "sent": outcome.sent}
    atomic_write_text(path, json_text(document, path=path, indent=2, ensure_ascii=False) + "\n")


def _support_json(support: AnswerSupport | None) -> dict[str, object] | None:
    if support is None:
        return None
    return {
        "sentences": support.sentences,
        "pairs": support.pairs,
        "precision": support.precision,
        "recall": support.recall,
        "labels": [{"sentence": s, "citation": label, "support": value} for s, label, value in support.labels],
    }
