"""`mtrbench assess`: DREAM debate assessment of a task's unjudged pooled documents."""

from __future__ import annotations

import argparse
from pathlib import Path

from mtrbench.assess.defaults import QUERY_FORMS
from mtrbench.assess.roles import pick_roles
from mtrbench.assess.stats import stats_table
from mtrbench.cli.assess_umbrela import cmd_umbrela
from mtrbench.cli.common import Handler, Subparsers
from mtrbench.cli.flag_types import positive_int
from mtrbench.cli.llm_flags import add_llm_arguments, cache_from_args, check_failure_rates, judges_from_args
from mtrbench.formats.lines import read_log_records
from mtrbench.infra.atomic import check_folder_target
from mtrbench.llm.failure_rate import JudgeFailures, most_common


def register(sub: Subparsers) -> dict[str, Handler]:
    p = sub.add_parser(
        "assess",
        help="fill a task's judgment holes: DREAM debate (two LLM agents, escalation) or UMBRELA 0-3 LLM labels",
        description="Pool the top-k of several runs, drop pairs the task already judges, and label the rest. "
        "--method dream (default): a debate between two LLM agents with opposing opening stances (DREAM); "
        "agreement gives the label, persistent disagreement goes to humans (escalations.csv/jsonl) or to an LLM "
        "adjudicator; writes refined qrels usable with `mtrbench eval --refined-qrels`. --method umbrela: one "
        "judge grades each pair 0-3 on UMBRELA's scale (TREC RAG 2024's pool filling); writes umbrela_qrels.trec "
        "(original judgments kept) and umbrela_qrels.trec.llm.json naming every LLM-made line with the model and "
        "its settings. Resumable: pairs finished in the log are skipped.",
    )
    p.add_argument(
        "--method",
        choices=("dream", "umbrela"),
        default="dream",
        help="dream: debate (yes/no labels, escalation); umbrela: one judge grades each pair 0-3 [dream]",
    )
    p.add_argument("task", help="task name (`mtrbench tasks`), card YAML or data folder")
    p.add_argument("--runs", nargs="+", metavar="RUN", help="TREC run files of the task to pool")
    p.add_argument("--depth", type=positive_int, default=10, help="top-k of each run pooled per query [10]")
    p.add_argument("--rounds", type=positive_int, default=2, help="maximum debate rounds R [2]")
    p.add_argument(
        "--agents",
        metavar="JUDGE[,JUDGE]",
        help="judge(s) playing Agent A (opens 'relevant') and Agent B (opens 'not relevant') "
        "[the first judge, for both]",
    )
    p.add_argument(
        "--prefilter",
        action="store_true",
        help="drop a pair before the debate when all pre-filter judges say it is irrelevant",
    )
    p.add_argument("--prefilter-judges", metavar="J1,J2,J3", help="[the first three judges of --judges]")
    p.add_argument(
        "--adjudicator",
        metavar="JUDGE",
        help="let this judge settle persistent disagreements instead of leaving them to humans",
    )
    p.add_argument(
        "--humans",
        metavar="FILE",
        help="merge human labels for escalated pairs: the filled escalations.csv (human_label column: "
        "yes/no or a grade) or JSONL with qid, doc_id, human_label",
    )
    p.add_argument(
        "--relevant-grade", type=positive_int, help="grade written for a 'relevant' label [the task's highest grade]"
    )
    p.add_argument(
        "--query-form",
        default="auto",
        choices=QUERY_FORMS,
        help="how the question is shown: auto = gold rewrite if the task has one, else the conversation",
    )
    p.add_argument("--split", help="split [the card's eval split]")
    p.add_argument("--data-dir", help="local copy of the task's data, laid out as published")
    p.add_argument("--corpus", help="external corpus, for tasks that do not ship one")
    p.add_argument("--output-dir", help="where the files go [results/assess/<task>]")
    p.add_argument("--quiet", action="store_true", help="no progress output")

    add_llm_arguments(p)
    return {"assess": _cmd_assess}


def _cmd_assess(args: argparse.Namespace) -> int:
    if args.method == "umbrela":
        return cmd_umbrela(args)
    from rich.console import Console

    from mtrbench.assess.assessment import AssessOptions, run_assessment  # deferred: loads openai

    if args.output_dir:
        check_folder_target(args.output_dir)  # a file in the way: one line before anything is asked
    console = Console(stderr=True)
    if args.runs or args.judges or args.llm_model:
        judges = judges_from_args(args)
        roles = pick_roles(judges, args.agents, args.prefilter, args.prefilter_judges, args.adjudicator)
    else:  # only merging human labels: no judge needed
        roles = None
    options = AssessOptions(
        task=args.task,
        runs=args.runs,
        depth=args.depth,
        rounds=args.rounds,
        prefilter=args.prefilter,
        humans=args.humans,
        output_dir=args.output_dir,
        relevant_grade=args.relevant_grade,
        query_form=args.query_form,
        split=args.split,
        data_dir=args.data_dir,
        corpus=args.corpus,
        dry_run=args.dry_run,
        yes=args.yes,
        quiet=args.quiet,
    )
    result = run_assessment(
        options,
        roles,
        cache=None if args.dry_run else cache_from_args(args),
        say=lambda message: console.print(f"[dim]{message}[/dim]"),
    )
    if result.dry_run:
        print(result.message)
        return 0
    out = Console()
    out.print(stats_table(result.stats, f"DREAM assessment of {result.stats['task']} ({result.stats['split']})"))
    for name, u in result.usage.items():
        cost = f", ${u['cost_usd']:.4f}" if u["cost_usd"] is not None else ""
        out.print(
            f"[dim]{name} ({u['model']}): {u['requests']} requests, {u['cached']} from cache, "
            f"{u['failures']} failed, {u['prompt_tokens']}+{u['completion_tokens']} tokens{cost}[/dim]"
        )
    for what, n in result.warnings.items():
        out.print(f"[yellow]warning: {what}: {n}[/yellow]")
    p = result.paths
    out.print(
        f"[dim]refined qrels: {p.qrels}\nlog: {p.log}\nescalations: {p.escalations_csv} (+ .jsonl)\n"
        f"statistics: {p.stats}[/dim]",
        soft_wrap=True,
    )
    reason = most_common(_logged_failure_reasons(p.log))
    return check_failure_rates(
        args, [JudgeFailures(name, u["failures"], u["items"], reason) for name, u in result.usage.items()]
    )


def _logged_failure_reasons(log: Path) -> list[str]:
    """The reasons of the failed records in the assessment log, without the 'agent round n:' prefix."""
    import re

    records, _ = read_log_records(log)
    reasons: list[str] = []
    for record in records:
        if record.get("status") != "failed":
            continue
        texts = list((record.get("errors") or {}).values()) or ([record["error"]] if record.get("error") else [])
        for text in texts:
            reasons.extend(re.sub(r"^\S+ round \d+: ", "", part) for part in str(text).split("; "))
    return reasons
