"""`mtrbench assess`: DREAM debate assessment of a task's unjudged pooled documents."""

from __future__ import annotations

import argparse
from pathlib import Path

from mtrbench.assess.roles import pick_roles
from mtrbench.assess.stats import stats_table
from mtrbench.cli.assess_umbrela import cmd_umbrela
from mtrbench.cli.llm_flags import cache_from_args, check_failure_rates, judges_from_args
from mtrbench.formats.lines import read_log_records
from mtrbench.infra.atomic import check_folder_target
from mtrbench.llm.failure_rate import JudgeFailures, most_common


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
