"""MTR-EVAL (MTR-SUITE §3): audit a benchmark's gold labels with LLM judges.

task -> audited queries -> hard negatives (completeness) -> plan of judge items -> skip what the log has
answered -> cost estimate -> ask each judge (every reply appended to the log) -> aggregates, hole
candidates, correlation with human scores -> files. The CLI prints the table and notes from the outcome.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench import __version__
from mtrbench.audit.defaults import DEFAULT_MAX_DOC_CHARS, DEFAULT_NEGATIVES
from mtrbench.audit.human import Correlation, HumanScores, read_human_scores
from mtrbench.audit.log import LOG_NAME, ItemKey, audit_log, audit_requests, judge_stage
from mtrbench.audit.negatives import HardNegatives, negatives_from_retriever, negatives_from_run
from mtrbench.audit.plan import COMPLETENESS, AuditPlan, build_plan, select_queries, supported_dimensions
from mtrbench.audit.report import ENSEMBLE, Stats, aggregate, correlations, hole_candidates, write_holes
from mtrbench.data import load_task, resolve_card
from mtrbench.data.cards import TaskCard
from mtrbench.data.model import TaskData, first_conversations
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.infra.numeric import json_lines, json_text
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.failure_rate import JudgeFailures
from mtrbench.llm.stage import Stage, StageLog, StageOptions, StageRun, plan_stages, run_stages
from mtrbench.results.writer import safe_name
from mtrbench.retrieve import ResolvedModel

INSTANCES_NAME = "instances.jsonl"
SUMMARY_NAME = "summary.json"

log = logging.getLogger(__name__)


@dataclass
class AuditConfig:
    task: str
    split: str | None = None
    data_dir: str | None = None
    corpus_path: str | None = None
    dimensions: list[str] | None = None  # None: every dimension the task's data supports
    n_negatives: int = DEFAULT_NEGATIVES
    negatives_model: str | ResolvedModel = "bm25"  # a name, or one resolved already (the CLI checks it early)
    negatives_run: str | None = None  # take hard negatives from this TREC run instead of retrieving
    negatives_history: str = "full"  # how queries are serialized for the negatives retriever
    device: str = "auto"
    seed: int = 0
    limit: int | None = None  # the first N conversations in file order, as eval's --limit
    sample: int | None = None  # then a seeded sample of N of their queries with gold
    max_doc_chars: int | None = DEFAULT_MAX_DOC_CHARS
    output_dir: Path | None = None  # None: results/audit/<task>
    human_scores: str | None = None
    dry_run: bool = False
    yes: bool = False
    show_progress: bool = True


@dataclass
class AuditOutcome:
    """What an audit did, for the caller to show: after a dry run only ``plan`` and ``notes`` are filled."""

    output_dir: Path
    plan: AuditPlan
    notes: Counter
    dry_run: bool = False
    title: str = ""  # the table's title: MTR-EVAL · task (split) · N queries
    stats: dict[str, dict[str, Stats]] = field(default_factory=dict)
    correlation: dict[str, dict[str, Correlation]] = field(default_factory=dict)
    holes: list[dict[str, Any]] = field(default_factory=list)
    sent: dict[str, int] = field(default_factory=dict)  # judge -> requests asked in this run (items, not attempts)
    failures: list[JudgeFailures] = field(default_factory=list)  # per judge, for --max-failure-rate
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def summary_path(self) -> Path:
        return self.output_dir / SUMMARY_NAME

    @property
    def log_path(self) -> Path:
        return self.output_dir / LOG_NAME

    @property
    def holes_qrels_path(self) -> Path:
        return self.output_dir / self.summary["files"]["hole_candidates_qrels"]


@dataclass
class _Audit:
    """One audit's fixed inputs, handed from step to step."""

    config: AuditConfig
    judges: Sequence[JudgeConfig]
    card: TaskCard
    task: TaskData
    log: StageLog

    @property
    def output_dir(self) -> Path:
        return self.log.path.parent


def default_output_dir(task_name: str) -> Path:
    return Path("results") / "audit" / safe_name(task_name)


def _validate(config: AuditConfig, judges: Sequence[JudgeConfig]) -> None:
    if config.n_negatives < 1:
        raise UserInputError("--negatives must be at least 1")
    if config.limit is not None and config.limit < 1:
        raise UserInputError("--limit must be at least 1")
    if config.sample is not None and config.sample < 1:
        raise UserInputError("--sample must be at least 1")
    if config.max_doc_chars is not None and config.max_doc_chars < 1:
        raise UserInputError("--max-doc-chars must be positive (0 on the command line: no limit)")
    if not judges:
        raise UserInputError("no judge: pass --judges FILE or --llm-model MODEL")
    if len(judges) > 1 and any(j.name == ENSEMBLE for j in judges):
        raise UserInputError(f"a judge may not be named '{ENSEMBLE}': that row averages the judges")


def _negatives(config: AuditConfig, task: TaskData, queries) -> HardNegatives:
    if config.negatives_run:
        return negatives_from_run(config.negatives_run, task, queries, config.n_negatives)
    return negatives_from_retriever(
        config.negatives_model,
        task,
        queries,
        config.n_negatives,
        history=config.negatives_history,
        device=config.device,
        show_progress=config.show_progress,
    )


def _model_name(model: str | ResolvedModel) -> str:
    return model if isinstance(model, str) else model.requested


def run_audit(
    config: AuditConfig,
    judges: Sequence[JudgeConfig],
    cache: ResponseCache | None = None,
    say: Callable[[str], None] | None = None,
) -> AuditOutcome:
    """Run (or resume) an audit; ``say`` gets the progress lines (default: this module's logger)."""
    say = say or log.info
    _validate(config, judges)
    human = read_human_scores(config.human_scores) if config.human_scores else None  # bad file: fail before spending

    card = resolve_card(config.task)
    say(f"Loading task {card.name}")
    task = load_task(card, split=config.split, data_dir=config.data_dir, corpus_path=config.corpus_path)
    output_dir = Path(config.output_dir) if config.output_dir else default_output_dir(task.name)
    audit = _Audit(config, judges, card, task, audit_log(output_dir / LOG_NAME))
    options = StageOptions(cache=cache, dry_run=config.dry_run, yes=config.yes, show_progress=config.show_progress)
    # A dry run only reads the log. A real run holds it from computing what is left to ask until the summary
    # is written, so a second run on the same folder stops here, before retrieving negatives or asking anyone.
    with nullcontext() if config.dry_run else audit.log.hold():
        plan, negatives = _plan(audit, say)
        stages = [judge_stage(judge, plan.items) for judge in judges]
        pending = _pending(audit, plan, stages, say)
        if config.dry_run:  # the runner reports the first prompts and the requests: each pending item once per judge
            run_stages(stages, audit.log, options, shown=audit_requests([i for i in plan.items if i.key in pending]))
            return AuditOutcome(output_dir, plan, plan.notes, dry_run=True)
        atomic_write_text(
            output_dir / INSTANCES_NAME,
            json_lines((i.describe() for i in plan.items), path=output_dir / INSTANCES_NAME, ensure_ascii=False),
        )
        return _finish(audit, plan, negatives, human, run_stages(stages, audit.log, options))


def _plan(audit: _Audit, say: Callable[[str], None]) -> tuple[AuditPlan, HardNegatives | None]:
    """The audited queries, the dimensions their data supports, hard negatives and the judge items."""
    config, card, task = audit.config, audit.card, audit.task
    candidates = first_conversations(task, config.limit).queries if config.limit else task.queries
    queries, notes = select_queries(candidates, card.relevance_level, config.sample, config.seed)
    dimensions, left_out = supported_dimensions(queries, config.dimensions)
    for dimension in left_out:
        notes[f"{dimension}: not run (no audited query has a reference answer)"] += 1
    negatives = None
    if COMPLETENESS in dimensions:
        source = f"run {config.negatives_run}" if config.negatives_run else _model_name(config.negatives_model)
        say(f"Hard negatives: top {config.n_negatives} non-gold documents from {source}")
        negatives = _negatives(config, task, queries)
        notes.update(negatives.notes)
    plan = build_plan(
        queries,
        task.corpus,
        dimensions,
        card.relevance_level,
        negatives.by_qid if negatives else None,
        config.n_negatives,
        config.seed,
        config.max_doc_chars,
        notes,
    )
    if not plan.items:
        raise DataError("the audit plan is empty: no audited query supports the requested dimensions")
    return plan, negatives


def _pending(audit: _Audit, plan: AuditPlan, stages: Sequence[Stage], say: Callable[[str], None]) -> set[str]:
    """The keys of the items some judge has still to answer; says how many the log has answered."""
    outcomes = plan_stages(stages, audit.log).outcomes
    n_pending = sum(len(o.pending) for o in outcomes)
    n_done = len(plan.items) * len(audit.judges) - n_pending
    say(
        f"{len(plan.queries)} queries, {len(plan.items)} items x {len(audit.judges)} judge(s): {n_done} answered in "
        f"{audit.log.path}, {n_pending} to ask"
    )
    return {item.key for outcome in outcomes for item in outcome.pending}


def _finish(
    audit: _Audit,
    plan: AuditPlan,
    negatives: HardNegatives | None,
    human: HumanScores | None,
    run: StageRun,
) -> AuditOutcome:
    """Aggregates, correlations and hole candidates from the judges' latest records; writes holes and the summary."""
    latest: dict[str, dict[ItemKey, dict[str, Any]]] = {}
    for outcome in run.outcomes:
        name = outcome.stage.judge.name
        records = ((item, outcome.records.get(item.key)) for item in plan.items)
        latest[name] = {(i.dimension, i.instance_id, name): r.to_json() for i, r in records if r is not None}
    stats, scores = aggregate(plan.items, plan.dimensions, latest)
    correlation = correlations(scores, human) if human else {}
    holes = hole_candidates(plan.items, latest)
    holes_qrels, holes_jsonl = write_holes(audit.output_dir, holes)
    if run.unreadable_log_lines:
        plan.notes["log lines cut short by an interrupted run (ignored)"] = run.unreadable_log_lines
    files = {
        "log": LOG_NAME,
        "instances": INSTANCES_NAME,
        "hole_candidates_qrels": holes_qrels.name,
        "hole_candidates_jsonl": holes_jsonl.name,
    }
    usage = {o.stage.judge.name: o.usage_summary() for o in run.outcomes if o.pending}
    summary = _summary(audit, plan, negatives, stats, correlation, holes, usage, files)
    atomic_write_text(
        audit.output_dir / SUMMARY_NAME,
        json_text(summary, path=audit.output_dir / SUMMARY_NAME, indent=2, ensure_ascii=False) + "\n",
    )
    return AuditOutcome(
        audit.output_dir,
        plan,
        plan.notes,
        title=f"MTR-EVAL · {audit.task.name} ({audit.task.split}) · {len(plan.queries)} queries",
        stats=stats,
        correlation=correlation,
        holes=holes,
        sent={o.stage.judge.name: len(o.pending) for o in run.outcomes},
        failures=run.failures(),
        summary=summary,
    )


def _summary(
    audit: _Audit,
    plan: AuditPlan,
    negatives: HardNegatives | None,
    stats: dict[str, dict[str, Stats]],
    correlation: dict[str, dict[str, Correlation]],
    holes: list[dict[str, Any]],
    usage: dict[str, dict[str, int | float | None]],
    files: dict[str, str],
) -> dict[str, Any]:
    config, task, judges = audit.config, audit.task, audit.judges
    return {
        "mtrbench_version": __version__,
        "task": task.name,
        "split": task.split,
        "dataset_revision": task.dataset_revision,
        "judges": [{"name": j.name, "model": j.model, "base_url": j.base_url} for j in judges],
        "settings": {
            "dimensions": plan.dimensions,
            "seed": config.seed,
            "limit": config.limit,
            "sample": config.sample,
            "relevance_level": audit.card.relevance_level,
            "max_doc_chars": config.max_doc_chars,
            "negatives": None if negatives is None else {"n": config.n_negatives, **negatives.source},
        },
        "counts": {
            "queries_in_split": len(task.queries),
            "audited_queries": len(plan.queries),
            "items": dict(Counter(i.dimension for i in plan.items)),
        },
        "aggregates": {d: {j: s.as_dict() for j, s in by_judge.items()} for d, by_judge in stats.items()},
        "correlation_with_humans": {
            d: {j: c.as_dict() for j, c in by_judge.items()} for d, by_judge in correlation.items()
        },
        "hole_candidates": {
            "picks": len(holes),
            "distinct_query_documents": len({(h["qid"], h["doc_id"]) for h in holes}),
        },
        "notes": dict(plan.notes),
        "usage_this_run": usage,
        "files": files,
        "ensemble": f"'{ENSEMBLE}' rows average the judges per instance" if len(judges) > 1 else None,
    }
