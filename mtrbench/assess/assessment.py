"""``mtrbench assess`` from start to end: pool, resume from the log, merge human labels, estimate the
cost, run the pending pairs, and write refined qrels, escalation files and statistics. Nothing here prints:
progress goes to a ``say`` callback (default: logging) and the CLI prints the result."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.assess.escalation import escalation_rows, merge_human_labels, write_escalations
from mtrbench.assess.estimate import cost_estimates, first_stage, requests_upper_bound
from mtrbench.assess.log import AssessmentLog, PairRecords
from mtrbench.assess.pooling import Pool, build_pool, read_runs
from mtrbench.assess.prompts import Case, build_case
from mtrbench.assess.refine import default_relevant_grade, refined_qrels
from mtrbench.assess.roles import Roles
from mtrbench.assess.runner import PairAssessor, Passes, assess_all
from mtrbench.assess.stats import assessment_stats
from mtrbench.data import load_task, resolve_card
from mtrbench.data.model import ConversationalQuery, TaskData
from mtrbench.formats.qrels import format_qrels
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import UserInputError
from mtrbench.infra.numeric import json_text
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.cost import confirm_cost, print_dry_run
from mtrbench.llm.hf_async import make_async_client
from mtrbench.llm.stage import StageOptions
from mtrbench.results.writer import safe_name

log = logging.getLogger(__name__)


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
    message: str | None = None  # after a dry run: what a real run would do, for the caller to show


@dataclass
class _Assessment:
    """One run's inputs, and the pairs its log holds (``entries``, filled once the log is held)."""

    options: AssessOptions
    roles: Roles | None
    task: TaskData
    queries: dict[str, ConversationalQuery]  # by qid
    original: dict[str, dict[str, int]]  # the task's own qrels
    grade: int  # written for a 'relevant' label
    paths: OutputPaths
    pool: Pool | None
    log: AssessmentLog
    warnings: Counter
    entries: dict[tuple[str, str], PairRecords] = field(default_factory=dict)
    cases: dict[tuple[str, str], Case | None] = field(default_factory=dict)

    def case_for(self, entry: PairRecords) -> Case | None:
        """The pair as shown to the judges, or None when the task no longer has its query or document."""
        key = (entry.qid, entry.doc_id)
        if key not in self.cases:
            query = self.queries.get(entry.qid)
            if query is None or entry.doc_id not in self.task.corpus:
                self.warnings["logged pairs whose query or document the task no longer has (left as they are)"] += 1
                self.cases[key] = None
            else:
                self.cases[key] = build_case(query, self.task.corpus, entry.doc_id, self.options.query_form)
        return self.cases[key]


def run_assessment(
    options: AssessOptions,
    roles: Roles | None,
    cache: ResponseCache | None = None,
    say: Callable[[str], None] | None = None,
) -> AssessResult:
    """``roles`` None: no judge is configured, so only human labels are merged and the outputs rewritten.
    ``say`` gets the progress lines (not with ``quiet``) and the cost note (default: this module's logger)."""
    note = say or log.info
    run = _prepare(options, roles)
    # A dry run only reads the log. A real run holds it from reading what is done until the outputs are
    # written, so a second run on the same folder stops here instead of repeating (and paying for) the work.
    with nullcontext() if options.dry_run else run.log.hold():
        _read_entries(run)
        run.warnings.update(run.log.warnings)
        if options.humans and not options.dry_run:
            merge_human_labels(options.humans, run.log, run.entries, run.original, run.warnings)
            run.log.close()
        work = _work(run, roles) if roles is not None else []
        if not options.quiet:
            note(f"{run.task.name}: {len(run.entries)} pairs ({len(work)} with work left), log {run.paths.log}")
        if options.dry_run:
            return _dry_run(run, roles, work)
        usage = _assess(run, roles, work, cache, note) if roles is not None and work else {}
        run.log.close()
        return AssessResult(run.paths, write_outputs(run, usage), usage, run.warnings)


def _read_entries(run: _Assessment) -> None:
    """The pairs the log holds, then the pooled pairs it does not have yet."""
    run.entries = run.log.read()
    for pair in run.pool.pairs if run.pool else ():
        run.entries.setdefault((pair.qid, pair.doc_id), PairRecords(pair.qid, pair.doc_id))


def _prepare(options: AssessOptions, roles: Roles | None) -> _Assessment:
    """Checks the options, loads the task and pools the runs; nothing read from the log yet."""
    if options.rounds < 1:
        raise UserInputError("--rounds must be at least 1")
    if not options.runs and not options.humans:
        raise UserInputError("give the runs to pool (--runs RUN.trec ...) or human labels to merge (--humans FILE)")
    card = resolve_card(options.task)
    task = load_task(card, split=options.split, data_dir=options.data_dir, corpus_path=options.corpus)
    original = task.qrels()
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
    queries = {q.qid: q for q in task.queries}
    return _Assessment(options, roles, task, queries, original, grade, paths, pool, AssessmentLog(paths.log), warnings)


def _work(run: _Assessment, roles: Roles) -> list[tuple[Case, PairRecords]]:
    """The pairs with a step left under these roles (pre-filter, debate or adjudication), with their cases."""
    settings = roles.debate_settings(run.options.rounds)
    adjudicator = roles.adjudicator.name if roles.adjudicator else None
    work = []
    for entry in run.entries.values():
        if not (
            entry.needs_prefilter(bool(roles.prefilter))
            or entry.needs_debate(settings)
            or entry.needs_adjudication(adjudicator)
        ):
            continue
        case = run.case_for(entry)
        if case is None:
            continue
        work.append((case, entry))
        if entry.human is None and entry.debate_is_stale(settings):
            run.warnings[
                "pairs debated again: logged under other agents or another --rounds "
                "(rounds both share come from the LLM cache)"
            ] += 1
        elif (
            adjudicator
            and entry.escalated
            and entry.adjudication is not None
            and entry.adjudication.get("judge", adjudicator) != adjudicator
        ):
            run.warnings["disagreements adjudicated again: logged with another adjudicator"] += 1
    return work


def _dry_run(run: _Assessment, roles: Roles | None, work: list[tuple[Case, PairRecords]]) -> AssessResult:
    """The first prompts and the number of requests a real run could send; nothing is sent or written."""
    if roles is None or not work:
        message = "nothing to assess: every pooled pair is finished in the log"
    else:
        by_judge = requests_upper_bound(roles, run.options.rounds, work)
        print_dry_run(*first_stage(roles, by_judge))
        total = sum(len(r) for stages in by_judge.values() for r in stages.values())
        message = (
            f"{len(work)} pairs to assess; at most {total} requests in all (every pair through every stage and round)"
        )
    return AssessResult(run.paths, {}, {}, run.warnings, dry_run=True, message=message)


def _assess(
    run: _Assessment,
    roles: Roles,
    work: list[tuple[Case, PairRecords]],
    cache: ResponseCache | None,
    note: Callable[[str], None],
) -> dict[str, dict[str, Any]]:
    """Confirm the cost, run the pending steps of every pair (each logged as it ends); the usage per judge."""
    rounds = run.options.rounds
    estimates = cost_estimates(requests_upper_bound(roles, rounds, work), roles.judges(), cache)
    note(
        f"Cost upper bound: every pair passes the pre-filter, debates all {rounds} "
        f"round(s){' and reaches the adjudicator' if roles.adjudicator else ''} (in BRIDGE, "
        f"10% of the debated pairs needed round 2)."
    )
    confirm_cost(estimates, run.options.yes)
    clients = {j.name: make_async_client(j, cache) for j in roles.judges()}  # hf:// runs in-process
    options = StageOptions(cache=cache, yes=run.options.yes, show_progress=not run.options.quiet)
    n_workers = max(j.concurrency for j in roles.judges())
    passes = Passes(PairAssessor(roles, clients, rounds), run.log, options, n_workers)
    try:
        asyncio.run(assess_all(passes, work))
    except KeyboardInterrupt:  # what finished is in the log; leave files that show it
        _read_entries(run)
        write_outputs(run, {})
        raise
    finally:
        run.log.close()
    usage: dict[str, dict[str, Any]] = {}
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
    return usage


def write_outputs(run: _Assessment, usage: dict[str, Any]) -> dict[str, Any]:
    """Refined qrels, escalation files and statistics from the pairs in ``run.entries``; the statistics."""
    task, paths, options = run.task, run.paths, run.options
    order = [q.qid for q in task.queries]
    records = list(run.entries.values())
    atomic_write_text(paths.qrels, format_qrels(refined_qrels(run.original, records, run.grade, order)))
    escalated = []
    for entry in records:
        if entry.escalated:
            case = run.case_for(entry)
            if case is not None:
                escalated.append((case, entry))
    rank = {q: n for n, q in enumerate(order)}
    escalated.sort(key=lambda item: (rank.get(item[0].qid, len(rank)), item[0].qid, item[0].doc_id))
    write_escalations(escalation_rows(escalated), paths.escalations_jsonl, paths.escalations_csv)
    stats = assessment_stats(run.pool.summary() if run.pool else None, records, run.original, run.grade, options.rounds)
    stats = {
        "task": task.name,
        "split": task.split,
        **stats,
        "settings": {
            "rounds": options.rounds,
            "query_form": options.query_form,
            **(run.roles.describe() if run.roles is not None else {}),
        },
        "usage_this_run": usage,
        "warnings": dict(run.warnings),
        "files": {
            "refined_qrels": paths.qrels.name,
            "log": paths.log.name,
            "escalations": [paths.escalations_jsonl.name, paths.escalations_csv.name],
        },
    }
    atomic_write_text(paths.stats, json_text(stats, path=paths.stats, indent=2, ensure_ascii=False) + "\n")
    return stats
