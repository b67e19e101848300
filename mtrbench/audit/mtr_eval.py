"""MTR-EVAL (MTR-SUITE §3): audit a benchmark's gold labels with LLM judges.

task -> audited queries -> hard negatives (completeness) -> plan of judge items -> skip what the log has
answered -> cost estimate -> ask each judge (every reply appended to the log) -> aggregates, hole
candidates, correlation with human scores -> files and a table.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from mtrbench import __version__
from mtrbench.audit.defaults import DEFAULT_MAX_DOC_CHARS, DEFAULT_NEGATIVES  # noqa: F401
from mtrbench.audit.human import Correlation, read_human_scores
from mtrbench.audit.log import LOG_NAME, AuditLog, make_record
from mtrbench.audit.negatives import HardNegatives, negatives_from_retriever, negatives_from_run
from mtrbench.audit.plan import COMPLETENESS, AuditItem, AuditPlan, build_plan, select_queries, supported_dimensions
from mtrbench.audit.report import ENSEMBLE, Stats, aggregate, correlations, hole_candidates, print_table, write_holes
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.results.writer import safe_name

INSTANCES_NAME = "instances.jsonl"
SUMMARY_NAME = "summary.json"


@dataclass
class AuditConfig:
    task: str
    split: str | None = None
    data_dir: str | None = None
    corpus_path: str | None = None
    dimensions: list[str] | None = None  # None: every dimension the task's data supports
    n_negatives: int = DEFAULT_NEGATIVES
    negatives_model: str = "bm25"
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
    output_dir: Path
    plan: AuditPlan
    stats: dict[str, dict[str, Stats]]
    correlation: dict[str, dict[str, Correlation]]
    holes: list[dict[str, Any]]
    sent: dict[str, int]  # judge -> requests asked in this run (items, not HTTP attempts)
    summary: dict[str, Any] = field(default_factory=dict)


def default_output_dir(task_name: str) -> Path:
    return Path("results") / "audit" / safe_name(task_name)


def _validate(config: AuditConfig) -> None:
    if config.n_negatives < 1:
        raise UserInputError("--negatives must be at least 1")
    if config.limit is not None and config.limit < 1:
        raise UserInputError("--limit must be at least 1")
    if config.sample is not None and config.sample < 1:
        raise UserInputError("--sample must be at least 1")
    if config.max_doc_chars is not None and config.max_doc_chars < 1:
        raise UserInputError("--max-doc-chars must be positive (0 on the command line: no limit)")


def _negatives(config: AuditConfig, task, queries) -> HardNegatives:
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


def _requests(items: Sequence[AuditItem]) -> list:
    from mtrbench.llm.client import ChatRequest

    return [
        ChatRequest(key=item.key, messages=item.messages, parse=item.parser(), reply_format=item.reply_format)
        for item in items
    ]


def _print_notes(notes: Counter, console: Console) -> None:
    for note, count in notes.items():
        console.print(f"[yellow]note:[/yellow] {count} {note}", soft_wrap=True)


def run_audit(
    config: AuditConfig,
    judges: Sequence,
    cache=None,
    console: Console | None = None,
    say: Callable[[str], None] | None = None,
) -> AuditOutcome | None:
    """Run (or resume) an audit; None after a dry run."""
    from mtrbench.data import load_task, resolve_card

    console = console or Console()
    say = say or (lambda message: console.print(f"[dim]{message}[/dim]"))
    _validate(config)
    if not judges:
        raise UserInputError("no judge: pass --judges FILE or --llm-model MODEL")
    if len(judges) > 1 and any(j.name == ENSEMBLE for j in judges):
        raise UserInputError(f"a judge may not be named '{ENSEMBLE}': that row averages the judges")
    human = read_human_scores(config.human_scores) if config.human_scores else None  # bad file: fail before spending

    card = resolve_card(config.task)
    say(f"Loading task {card.name}")
    task = load_task(card, split=config.split, data_dir=config.data_dir, corpus_path=config.corpus_path)
    output_dir = Path(config.output_dir) if config.output_dir else default_output_dir(task.name)
    log = AuditLog(output_dir / LOG_NAME)
    # A dry run only reads the log. A real run holds it from computing what is left to ask until the summary
    # is written, so a second run on the same folder stops here, before retrieving negatives or asking anyone.
    with nullcontext() if config.dry_run else log.hold():
        return _audit(config, judges, cache, console, say, human, card, task, log)


def _audit(
    config: AuditConfig,
    judges: Sequence,
    cache,
    console: Console,
    say: Callable[[str], None],
    human,
    card,
    task,
    log: AuditLog,
) -> AuditOutcome | None:
    from mtrbench.llm.cost import confirm_cost, estimate_cost, print_dry_run
    from mtrbench.llm.hf import make_client

    output_dir = log.path.parent
    from mtrbench.data.model import first_conversations

    candidates = first_conversations(task, config.limit).queries if config.limit else task.queries
    queries, notes = select_queries(candidates, card.relevance_level, config.sample, config.seed)
    dimensions, left_out = supported_dimensions(queries, config.dimensions)
    for dimension in left_out:
        notes[f"{dimension}: not run (no audited query has a reference answer)"] += 1
    negatives = None
    if COMPLETENESS in dimensions:
        source = f"run {config.negatives_run}" if config.negatives_run else config.negatives_model
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

    contents = log.read()
    pending: dict[str, list[AuditItem]] = {}
    for judge in judges:
        latest = contents.latest(plan.items, judge.name, judge.model)
        pending[judge.name] = [
            i for i in plan.items if not latest.get((i.dimension, i.instance_id, judge.name), {}).get("ok")
        ]
    n_pending = sum(len(v) for v in pending.values())
    n_done = len(plan.items) * len(judges) - n_pending
    say(
        f"{len(queries)} queries, {len(plan.items)} items x {len(judges)} judge(s): {n_done} answered in "
        f"{log.path}, {n_pending} to ask"
    )

    if config.dry_run:
        pending_keys = {i.key for items in pending.values() for i in items}
        union = [i for i in plan.items if i.key in pending_keys]
        print_dry_run(_requests(union), list(judges))
        _print_notes(notes, console)
        return None
    # keys are checked before the cost question, so a missing one stops the run before anything is asked
    clients = {j.name: make_client(j, cache) for j in judges if pending[j.name]}  # hf:// runs in-process
    if n_pending:
        confirm_cost(
            [(j, estimate_cost(_requests(pending[j.name]), j, cache)) for j in judges if pending[j.name]], config.yes
        )

    atomic_write_text(
        output_dir / INSTANCES_NAME, "".join(json.dumps(i.describe(), ensure_ascii=False) + "\n" for i in plan.items)
    )
    sent: dict[str, int] = {}
    usage: dict[str, dict[str, Any]] = {}
    with log:
        for judge in judges:
            items = pending[judge.name]
            sent[judge.name] = len(items)
            if not items:
                continue
            by_key = {i.key: i for i in items}
            client = clients[judge.name]

            def on_result(result, judge=judge, by_key=by_key) -> None:
                log.append(make_record(by_key[result.key], judge.name, judge.model, result))

            client.run(_requests(items), desc=f"{judge.name}", show_progress=config.show_progress, on_result=on_result)
            u = client.usage
            usage[judge.name] = {
                "requests": u.requests,
                "cached": u.cached,
                "failures": u.failures,
                "prompt_tokens": u.prompt_tokens,
                "completion_tokens": u.completion_tokens,
                "cost_usd": u.cost_usd(judge),
            }

    contents = log.read()
    latest = {j.name: contents.latest(plan.items, j.name, j.model) for j in judges}
    stats, scores = aggregate(plan.items, dimensions, latest)
    correlation = correlations(scores, human) if human else {}
    holes = hole_candidates(plan.items, latest)
    holes_qrels, holes_jsonl = write_holes(output_dir, holes)
    if contents.unreadable_lines:
        notes["log lines cut short by an interrupted run (ignored)"] = contents.unreadable_lines
    summary = {
        "mtrbench_version": __version__,
        "task": task.name,
        "split": task.split,
        "dataset_revision": task.dataset_revision,
        "judges": [{"name": j.name, "model": j.model, "base_url": j.base_url} for j in judges],
        "settings": {
            "dimensions": dimensions,
            "seed": config.seed,
            "limit": config.limit,
            "sample": config.sample,
            "relevance_level": card.relevance_level,
            "max_doc_chars": config.max_doc_chars,
            "negatives": None if negatives is None else {"n": config.n_negatives, **negatives.source},
        },
        "counts": {
            "queries_in_split": len(task.queries),
            "audited_queries": len(queries),
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
        "notes": dict(notes),
        "usage_this_run": usage,
        "files": {
            "log": LOG_NAME,
            "instances": INSTANCES_NAME,
            "hole_candidates_qrels": holes_qrels.name,
            "hole_candidates_jsonl": holes_jsonl.name,
        },
        "ensemble": f"'{ENSEMBLE}' rows average the judges per instance" if len(judges) > 1 else None,
    }
    atomic_write_text(output_dir / SUMMARY_NAME, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")

    print_table(f"MTR-EVAL · {task.name} ({task.split}) · {len(queries)} queries", stats, correlation, console)
    _print_notes(notes, console)
    console.print(
        f"[dim]{len(holes)} completeness pick(s) on non-gold documents -> {holes_qrels}[/dim]", soft_wrap=True
    )
    console.print(f"[dim]results: {output_dir / SUMMARY_NAME}, per-reply log {log.path}[/dim]", soft_wrap=True)
    return AuditOutcome(output_dir, plan, stats, correlation, holes, sent, summary)
