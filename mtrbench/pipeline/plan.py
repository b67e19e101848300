"""Step 1 of an evaluation: everything known before the task is loaded. The requested measures and histories
are checked, each history's result path and recorded settings are fixed, and finished results are found
(mteb's overwrite strategies), so a resumed sweep skips them without loading anything."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from mtrbench.analyses.run import AnalysisOptions
from mtrbench.data import resolve_card
from mtrbench.data.cards import TaskCard
from mtrbench.generation.model_history import RewriterOptions, rewriter_identity
from mtrbench.infra.errors import UserInputError
from mtrbench.measures import Measure, parse_measures
from mtrbench.measures.protocols import ScoringProtocol
from mtrbench.measures.protocols import for_card as protocol_for_card
from mtrbench.pipeline.histories import History, HistoryChoice, resolve_histories
from mtrbench.results.overwrite import decide
from mtrbench.results.settings import ResultSettings
from mtrbench.results.writer import ResultPaths, result_paths
from mtrbench.retrieve.base import Retriever
from mtrbench.serialize.history import DEFAULT_HISTORY, QueryFormat
from mtrbench.serialize.ptkb import parse_ptkb
from mtrbench.serialize.truncate import DEFAULT_TRUNCATE, Truncator


@dataclass
class EvalConfig:
    histories: list[HistoryChoice] = field(default_factory=lambda: [DEFAULT_HISTORY])
    truncate: str = DEFAULT_TRUNCATE
    fmt: QueryFormat = field(default_factory=QueryFormat)
    top_k: int = 100
    k_values: list[int] | None = None  # None: the task card's
    metrics: list[str] | None = None  # measure strings or family names; None: the task card's
    split: str | None = None
    data_dir: str | None = None
    corpus_path: str | None = None
    output_dir: Path = Path("results")
    command: str | None = None
    skip_inapplicable: bool = False  # drop strategies the task cannot support (e.g. rewrite without rewrites)
    analyses: AnalysisOptions = field(default_factory=AnalysisOptions)  # refined qrels, RAGAlign
    limit: int | None = None  # evaluate the first N conversations only (recorded in settings and the folder name)
    overwrite: str = "always"  # mteb's overwrite strategies (results/overwrite.py); the CLI's default: only-missing
    rewriter: RewriterOptions | None = None  # the model behind rewrite:llm / summary:llm
    protocol: str | None = None  # --protocol: official or trec_eval; None: each task card's default
    ptkb: str | None = None  # --ptkb: personal statements in the query (serialize/ptkb.py); None: none


@dataclass(frozen=True)
class SkippedResult:
    """A strategy not evaluated because its finished result exists (overwrite strategy only-missing/never)."""

    model: str
    task: str
    history: str
    path: Path


@dataclass
class PlannedHistory:
    history: History
    paths: ResultPaths
    settings: ResultSettings  # what the result records, known before the task is loaded
    experiment: str | None  # its folder name under experiments/ (None: default settings, mteb's plain layout)


@dataclass
class Plan:
    requested_model: str
    card: TaskCard
    split: str
    measures: list[Measure]
    k_values: list[int]
    histories: list[PlannedHistory]  # to evaluate
    skipped: list[SkippedResult]
    protocol: ScoringProtocol
    # every history's (name, result path, planned settings), evaluated or skipped (pipeline/known_plans.py)
    all_planned: list[tuple[str, Path, ResultSettings]] = field(default_factory=list)


def check_request(config: EvalConfig, card: TaskCard) -> tuple[list[int], list[Measure], ScoringProtocol]:
    """The cutoffs, measures and scoring protocol, after the checks that need no model and no data."""
    if config.limit is not None and config.limit < 1:
        raise UserInputError(f"--limit must be a positive number of conversations, got {config.limit}")
    if card.type != "conversational-retrieval" and "retrieval" not in card.type:
        raise UserInputError(
            f"task '{card.name}' is a {card.type} task, not a retrieval task: `mtrbench eval` "
            f"evaluates retrievers (see `mtrbench tasks show {card.name}`)"
        )
    k_values = list(config.k_values or card.k_values)
    measures = parse_measures(config.metrics or card.metrics, k_values)
    deepest = max(m.cutoff for m in measures)
    if config.top_k < deepest:
        raise UserInputError(f"--top-k {config.top_k} is smaller than the largest cutoff ({deepest})")
    if card.main_score not in {m.key(card.relevance_level) for m in measures}:
        raise UserInputError(f"the task's main score {card.main_score} is not among the requested metrics/k values")
    protocol = protocol_for_card(config.protocol, card)
    protocol.check(measures)
    if parse_ptkb(config.ptkb) is not None and card.format != "ikat":
        raise UserInputError(f"--ptkb {config.ptkb}: task '{card.name}' has no personal statements (TREC iKAT does)")
    return k_values, measures, protocol


def check_before_loading(config: EvalConfig, tasks: list[str | TaskCard]) -> list[TaskCard]:
    """Everything about a request that can be wrong without a model or data: history names, the rewriter they
    need, each task's name, measures, cutoffs and top-k. Run first, so a typo costs no model load."""
    resolve_histories(config.histories, config.rewriter)
    cards = [task if isinstance(task, TaskCard) else resolve_card(task) for task in tasks]
    for card in cards:
        check_request(config, card)
    return cards


def make_plan(
    requested_model: str,
    task: str | TaskCard,
    config: EvalConfig,
    retriever: Retriever,
    max_length_set: bool,
    on_skip: Callable[[SkippedResult], None] | None = None,
    identified: bool = True,
) -> Plan:
    """What to evaluate: every history whose result is not finished under ``config.overwrite``. ``identified``:
    false for a model object without a declared revision (``results/overwrite.decide``)."""
    histories = resolve_histories(config.histories, config.rewriter)
    card = task if isinstance(task, TaskCard) else resolve_card(task)
    k_values, measures, protocol = check_request(config, card)
    split = config.split or card.eval_split
    plan = Plan(requested_model, card, split, measures, k_values, [], [], protocol)
    for history in histories:
        if protocol.prefix_first_turn:
            history = replace(history, strategy=history.strategy.with_first_turn_prefixed())
        ptkb = parse_ptkb(config.ptkb)
        if ptkb is not None and ptkb.kind == "top" and ptkb.encoder is None and retriever.tokenizer is None:
            raise UserInputError(
                f"--ptkb {ptkb.spec}: the retriever {retriever.name} has no encoder to rank the statements with: "
                f"name one, top:{ptkb.k}@MODEL"
            )
        if ptkb is not None:
            history = replace(history, strategy=history.strategy.with_ptkb(ptkb))
        planned = plan_history(history, config, retriever, max_length_set, plan)
        plan.all_planned.append((history.name, planned.paths.json, planned.settings))
        if decide(planned.paths.json, planned.settings, config.overwrite, identified=identified).evaluate:
            plan.histories.append(planned)
        else:
            skipped = SkippedResult(requested_model, card.name, history.name, planned.paths.json)
            plan.skipped.append(skipped)
            if on_skip is not None:
                on_skip(skipped)
    return plan


def history_identity(history: History, config: EvalConfig) -> dict[str, str] | None:
    """What decides a model-backed or Python history's texts (recorded; compared to skip finished results)."""
    if history.python is not None:
        return {"kind": "python", "name": history.python.name}
    if history.strategy.model_kind:
        return rewriter_identity(history.strategy.model_kind, config.rewriter)
    return None


def plan_history(
    history: History, config: EvalConfig, retriever: Retriever, max_length_set: bool, plan: Plan
) -> PlannedHistory:
    """The settings a history's result records, built once here (a model-backed history records its rewriter's
    identity; the request counts are added once it has run), and the folder named from them."""
    truncator = Truncator(
        retriever.tokenizer, retriever.max_length, prompt=retriever.query_prompt, side=config.truncate
    )
    settings = ResultSettings(
        history=history.name,
        truncate=truncator.side,
        query_format=asdict(config.fmt),
        ptkb=history.strategy.ptkb.spec if history.strategy.ptkb is not None else None,
        top_k=config.top_k,
        k_values=tuple(plan.k_values),
        metrics=tuple(str(m) for m in plan.measures),
        split=plan.split,
        relevance_level=plan.card.relevance_level,
        protocol=plan.protocol.setting,
        retriever=retriever.settings(),
        pipeline=pipeline_slug(retriever) or None,
        limit=config.limit,
        rewriter=history_identity(history, config) or None,
    )
    experiment = settings.experiment_name(
        truncate=config.truncate,
        truncation_applies=retriever.tokenizer is not None,
        max_length=retriever.max_length if max_length_set else None,
    )
    paths = result_paths(config.output_dir, retriever.name, retriever.revision, plan.card.name, experiment)
    return PlannedHistory(history, paths, settings, experiment)


def pipeline_slug(retriever: Retriever) -> dict[str, Any] | None:
    """What a pipeline retriever (hybrid, reranker) adds to the experiment name; None for a single model."""
    slug = getattr(retriever, "pipeline_slug", None)
    return slug() if slug is not None else None
