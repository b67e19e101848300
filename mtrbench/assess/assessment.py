"""``mtrbench assess`` from start to end: pool, resume from the log, merge human labels, estimate the
cost, run the pending pairs, and write refined qrels, escalation files and statistics."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtrbench.assess.escalation import escalation_rows, merge_human_labels, write_escalations
from mtrbench.assess.estimate import cost_estimates, first_stage, requests_upper_bound
from mtrbench.assess.log import AssessmentLog, PairRecords
from mtrbench.assess.pooling import Pool, build_pool, read_runs
from mtrbench.assess.prompts import Case, build_case
from mtrbench.assess.refine import default_relevant_grade, refined_qrels
from mtrbench.assess.roles import Roles
from mtrbench.assess.runner import PairAssessor, assess_all
from mtrbench.assess.stats import assessment_stats
from mtrbench.formats.qrels import format_qrels
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import UserInputError

if TYPE_CHECKING:
    from rich.console import Console

    from mtrbench.llm.cache import ResponseCache


@dataclass
class OutputPaths:
    folder: Path

    @property
    def log(self) -> Path:
        return self.folder / "assessments.jsonl"

    @property
    def qrels(self) -> Path:
        return self.folder / "refined_qrels.trec"

    @property
    def escalations_jsonl(self) -> Path:
        return self.folder / "escalations.jsonl"

    @property
    def escalations_csv(self) -> Path:
        return self.folder / "escalations.csv"

    @property
    def stats(self) -> Path:
        return self.folder / "stats.json"


@dataclass
class AssessOptions:
    task: str
    runs: list[str] | None
    depth: int = 10
    rounds: int = 2
    prefilter: bool = False
    humans: str | None = None
    output_dir: str | None = None
    relevant_grade: int | None = None
    query_form: str = "auto"
    split: str | None = None
    data_dir: str | None = None
    corpus: str | None = None
    dry_run: bool = False
    yes: bool = False
    quiet: bool = False


@dataclass
class AssessResult:
    paths: OutputPaths
    stats: dict[str, Any]
    usage: dict[str, dict[str, Any]]
    warnings: Counter
    dry_run: bool = False


def run_assessment(
    options: AssessOptions, roles: Roles | None, cache: ResponseCache | None = None, console: Console | None = None
) -> AssessResult:
    """``roles`` None: no judge is configured, so only human labels are merged and the outputs rewritten."""
    from mtrbench.data import load_task, resolve_card
    from mtrbench.results.writer import safe_name

    if options.rounds < 1:
        raise UserInputError("--rounds must be at least 1")
    if not options.runs and not options.humans:
        raise UserInputError("give the runs to pool (--runs RUN.trec ...) or human labels to merge (--humans FILE)")
    say = (lambda m: None) if options.quiet or console is None else (lambda m: console.print(f"[dim]{m}[/dim]"))
    card = resolve_card(options.task)
    task = load_task(card, split=options.split, data_dir=options.data_dir, corpus_path=options.corpus)
    original = task.qrels()
    queries = {q.qid: q for q in task.queries}
    grade = (
        options.relevant_grade
        if options.relevant_grade is not None
        else default_relevant_grade(original, card.relevance_level)
    )
    if grade < 1:
        raise UserInputError("--relevant-grade must be at least 1")
    paths = OutputPaths(
        Path(options.output_dir) if options.output_dir else Path("results") / "assess" / safe_name(task.name)
    )
    warnings: Counter = Counter(task.warnings)

    pool: Pool | None = None
    if options.runs:
        pool = build_pool(task, read_runs(options.runs), options.depth)
        warnings.update(pool.warnings)
    log = AssessmentLog(paths.log)
    # A dry run only reads the log. A real run holds it from reading what is done until the outputs are
    # written, so a second run on the same folder stops here instead of repeating (and paying for) the work.
    with nullcontext() if options.dry_run else log.hold():
        entries = log.read()
        warnings.update(log.warnings)
        for pair in pool.pairs if pool else ():
            entries.setdefault((pair.qid, pair.doc_id), PairRecords(pair.qid, pair.doc_id))

        cases: dict[tuple[str, str], Case | None] = {}

        def case_for(entry: PairRecords) -> Case | None:
            key = (entry.qid, entry.doc_id)
            if key not in cases:
                query = queries.get(entry.qid)
                if query is None or entry.doc_id not in task.corpus:
                    warnings["logged pairs whose query or document the task no longer has (left as they are)"] += 1
                    cases[key] = None
                else:
                    cases[key] = build_case(query, task.corpus, entry.doc_id, options.query_form)
            return cases[key]

        if options.humans and not options.dry_run:
            merge_human_labels(options.humans, log, entries, original, warnings)
        work = []
        if roles is not None:
            settings = roles.debate_settings(options.rounds)
            adjudicator = roles.adjudicator.name if roles.adjudicator else None
            for entry in entries.values():
                if not (
                    entry.needs_prefilter(bool(roles.prefilter))
                    or entry.needs_debate(settings)
                    or entry.needs_adjudication(adjudicator)
                ):
                    continue
                case = case_for(entry)
                if case is None:
                    continue
                work.append((case, entry))
                if entry.human is None and entry.debate_is_stale(settings):
                    warnings[
                        "pairs debated again: logged under other agents or another --rounds "
                        "(rounds both share come from the LLM cache)"
                    ] += 1
                elif (
                    adjudicator
                    and entry.escalated
                    and entry.adjudication is not None
                    and entry.adjudication.get("judge", adjudicator) != adjudicator
                ):
                    warnings["disagreements adjudicated again: logged with another adjudicator"] += 1
        say(f"{task.name}: {len(entries)} pairs ({len(work)} with work left), log {paths.log}")
        usage: dict[str, dict[str, Any]] = {}
        if work:
            by_judge = requests_upper_bound(roles, options.rounds, work)
            if options.dry_run:
                from mtrbench.llm.cost import print_dry_run

                print_dry_run(*first_stage(roles, by_judge))
                total = sum(len(r) for stages in by_judge.values() for r in stages.values())
                print(
                    f"{len(work)} pairs to assess; at most {total} requests in all (every pair through every "
                    f"stage and round)"
                )
                return AssessResult(paths, {}, {}, warnings, dry_run=True)
            from mtrbench.llm.cost import confirm_cost
            from mtrbench.llm.hf_async import make_async_client

            estimates = cost_estimates(by_judge, roles.judges(), cache)
            if console is not None:
                console.print(
                    f"[dim]Cost upper bound: every pair passes the pre-filter, debates all {options.rounds} "
                    f"round(s){' and reaches the adjudicator' if roles.adjudicator else ''} (in BRIDGE, "
                    f"10% of the debated pairs needed round 2).[/dim]"
                )
            confirm_cost(estimates, options.yes)
            clients = {j.name: make_async_client(j, cache) for j in roles.judges()}  # hf:// runs in-process
            assessor = PairAssessor(roles, clients, log, options.rounds)
            n_workers = max(j.concurrency for j in roles.judges())
            try:
                asyncio.run(assess_all(assessor, work, n_workers, show_progress=not options.quiet))
            except KeyboardInterrupt:  # what finished is in the log; leave files that show it
                write_outputs(paths, pool, entries, original, grade, options, roles, task, case_for, {}, warnings)
                raise
            finally:
                log.close()
            for name, client in clients.items():
                u = client.usage
                usage[name] = {
                    "model": client.judge.model,
                    "requests": u.requests,
                    "cached": u.cached,
                    "failures": u.failures,
                    "items": u.items,
                    "prompt_tokens": u.prompt_tokens,
                    "completion_tokens": u.completion_tokens,
                    "cost_usd": u.cost_usd(client.judge),
                }
        elif options.dry_run:
            print("nothing to assess: every pooled pair is finished in the log")
            return AssessResult(paths, {}, {}, warnings, dry_run=True)
        log.close()
        stats = write_outputs(paths, pool, entries, original, grade, options, roles, task, case_for, usage, warnings)
        return AssessResult(paths, stats, usage, warnings)


def write_outputs(
    paths: OutputPaths,
    pool: Pool | None,
    entries: dict[tuple[str, str], PairRecords],
    original: dict[str, dict[str, int]],
    grade: int,
    options: AssessOptions,
    roles: Roles | None,
    task,
    case_for,
    usage: dict[str, Any],
    warnings: Counter,
) -> dict[str, Any]:
    order = [q.qid for q in task.queries]
    records = list(entries.values())
    atomic_write_text(paths.qrels, format_qrels(refined_qrels(original, records, grade, order)))
    escalated = []
    for entry in records:
        if entry.escalated:
            case = case_for(entry)
            if case is not None:
                escalated.append((case, entry))
    rank = {q: n for n, q in enumerate(order)}
    escalated.sort(key=lambda item: (rank.get(item[0].qid, len(rank)), item[0].qid, item[0].doc_id))
    write_escalations(escalation_rows(escalated), paths.escalations_jsonl, paths.escalations_csv)
    stats = assessment_stats(pool.summary() if pool else None, records, original, grade, options.rounds)
    stats = {
        "task": task.name,
        "split": task.split,
        **stats,
        "settings": {
            "rounds": options.rounds,
            "query_form": options.query_form,
            **(roles.describe() if roles is not None else {}),
        },
        "usage_this_run": usage,
        "warnings": dict(warnings),
        "files": {
            "refined_qrels": paths.qrels.name,
            "log": paths.log.name,
            "escalations": [paths.escalations_jsonl.name, paths.escalations_csv.name],
        },
    }
    atomic_write_text(paths.stats, json.dumps(stats, indent=2, ensure_ascii=False) + "\n")
    return stats
