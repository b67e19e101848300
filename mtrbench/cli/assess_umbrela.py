"""`mtrbench assess TASK --method umbrela`: the flags turned into options, the run, and what it prints."""

from __future__ import annotations

import argparse

from mtrbench.cli.llm_flags import cache_from_args, check_failure_rates, judges_from_args
from mtrbench.infra.errors import UserInputError

# DREAM's flags, which UMBRELA (one judge, one grade per pair) has no use for: flag -> its argparse name
DREAM_ONLY = {
    "--agents": "agents",
    "--prefilter": "prefilter",
    "--prefilter-judges": "prefilter_judges",
    "--adjudicator": "adjudicator",
    "--humans": "humans",
    "--relevant-grade": "relevant_grade",
}


def cmd_umbrela(args: argparse.Namespace) -> int:
    from rich.console import Console

    from mtrbench.assess.umbrela import UmbrelaOptions, run_umbrela  # deferred: loads openai

    check_failure_rates(args, [])  # a bad --max-failure-rate fails before anything is asked
    given = [flag for flag, name in DREAM_ONLY.items() if getattr(args, name, None) not in (None, False)]
    if given:
        raise UserInputError(f"{', '.join(given)}: DREAM's option(s), not used by --method umbrela")
    judges = judges_from_args(args)
    if len(judges) != 1:
        raise UserInputError(f"--method umbrela asks one judge; the judges file names {len(judges)}")
    options = UmbrelaOptions(
        task=args.task,
        runs=tuple(args.runs or ()),
        depth=args.depth,
        output_dir=args.output_dir,
        query_form=args.query_form,
        split=args.split,
        data_dir=args.data_dir,
        corpus=args.corpus,
        dry_run=args.dry_run,
        yes=args.yes,
        quiet=args.quiet,
    )
    result = run_umbrela(options, judges[0], cache=None if args.dry_run else cache_from_args(args))
    if result.dry_run_message is not None:
        print(result.dry_run_message)
        return 0
    out = Console(soft_wrap=True)
    pool = result.pool
    out.print(
        f"UMBRELA labels for {result.task} ({result.split}): {pool['pooled_pairs']} pooled pairs at depth "
        f"{pool['depth']}, {pool['already_judged']} already judged, {pool['to_assess']} to label; "
        f"{len(result.filled)} labelled ({result.asked_now} asked now), {result.failures.failed} failed"
    )
    out.print("grades: " + ", ".join(f"{g}: {n}" for g, n in result.grade_counts.items()))
    u = result.usage
    if u:
        cost = f", ${u['cost_usd']:.4f}" if u.get("cost_usd") is not None else ""
        out.print(
            f"[dim]{result.failures.judge}: {u['requests']} requests, {u['cached']} from cache, "
            f"{u['prompt_tokens']}+{u['completion_tokens']} tokens{cost}[/dim]"
        )
    for what, n in result.warnings.items():
        out.print(f"[yellow]warning: {what}: {n}[/yellow]")
    p = result.paths
    out.print(f"[dim]qrels: {p.qrels}\nLLM-made labels and settings: {p.sidecar}\nlog: {p.log}[/dim]")
    return check_failure_rates(args, [result.failures])
