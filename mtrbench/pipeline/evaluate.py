"""The main path: task -> serialize -> retrieve -> score -> result files."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from mtrbench.data import load_task, resolve_card
from mtrbench.data.model import TaskData
from mtrbench.infra.errors import MtrbenchError
from mtrbench.analyses.run import AnalysisOptions, run_analyses
from mtrbench.analyses.breakdown import by_topic_switch, by_turn
from mtrbench.analyses.report import confidence_intervals, refined_comparison
from mtrbench.results.table import summary_keys
from mtrbench.formats.run import Run, run_tag
from mtrbench.generation.model_history import RewriterOptions, compute_model_history, rewriter_identity
from mtrbench.measures import Measure, evaluate, parse_measures
from mtrbench.results.model_meta import model_meta, write_model_meta
from mtrbench.results.overwrite import decide
from mtrbench.results.writer import (ResultPaths, experiment_slug, hardware, result_document, result_paths,
                                     write_result)
from mtrbench.retrieve import RetrieverOptions, build_retriever, resolve_model
from mtrbench.retrieve.base import Retriever
from mtrbench.serialize.history import (DEFAULT_HISTORY, HistoryStrategy, QueryFormat, check_strategy_applies,
                                       get_strategy)
from mtrbench.serialize.truncate import DEFAULT_TRUNCATE, Truncator

ALL_HISTORIES = ("current", "full", "window:5", "questions", "last-response", "rewrite")


@dataclass
class EvalConfig:
    histories: list[str] = field(default_factory=lambda: [DEFAULT_HISTORY])
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


@dataclass
class StrategyResult:
    history: str
    scores: dict[str, float]
    main_score_key: str
    evaluation: Any
    breakdowns: dict[str, Any]
    truncation: dict[str, Any]
    paths: Any
    n_evaluated: int
    n_excluded: int
    analyses: dict[str, Any] = field(default_factory=dict)
    warnings: dict[str, int] = field(default_factory=dict)  # the loader's counted drops, as in the result JSON


@dataclass(frozen=True)
class SkippedResult:
    """A strategy not evaluated because its finished result exists (overwrite strategy only-missing/never)."""
    model: str
    task: str
    history: str
    path: Path


def experiment_name(history: str, config: EvalConfig, retriever: Retriever, max_length_set: bool,
                    rewriter_model: str | None = None) -> str | None:
    """Empty for default settings (mteb's plain layout); else a readable slug of what differs."""
    pipeline = dict(pipeline_slug(retriever) or {})
    if rewriter_model:  # two rewriters must not share one result folder
        pipeline["rewriter"] = rewriter_model
    return experiment_slug(history=history, truncate=config.truncate, truncation_applies=retriever.tokenizer is not None,
                           fmt=asdict(config.fmt), max_length=retriever.max_length if max_length_set else None,
                           dtype=retriever.settings().get("dtype"), pipeline=pipeline or None,
                           limit=config.limit)


def pipeline_slug(retriever: Retriever) -> dict[str, Any] | None:
    """What a pipeline retriever (hybrid, reranker) adds to the experiment name; None for a single model."""
    slug = getattr(retriever, "pipeline_slug", None)
    return slug() if slug is not None else None


def hits_to_run(task: TaskData, hits) -> Run:
    ids = task.corpus.ids
    return {q.qid: {ids[i]: float(s) for i, s in zip(*hits[n])} for n, q in enumerate(task.queries)}


def first_conversations(task: TaskData, limit: int) -> TaskData:
    """The queries of the first ``limit`` conversations in the task's own (file) order; the corpus stays whole."""
    kept: list[str] = []
    for q in task.queries:
        if q.conversation_id not in kept:
            if len(kept) == limit:
                continue
            kept.append(q.conversation_id)
    keep = set(kept)
    queries = [q for q in task.queries if q.conversation_id in keep]
    qids = {q.qid for q in queries}
    extra = {name: {qid: rels for qid, rels in qrels.items() if qid in qids} for name, qrels in task.extra_qrels.items()}
    return replace(task, queries=queries, extra_qrels=extra)


def run_eval(model: str, task_name: str, config: EvalConfig, retriever_options: RetrieverOptions | None = None,
             progress: Callable[[str], None] | None = None, retriever: Retriever | None = None,
             on_skip: Callable[[SkippedResult], None] | None = None) -> list[StrategyResult]:
    """``retriever``: one built already (a sweep reuses its legs; a run over several tasks, the model); else built
    from ``model`` and the options. Strategies whose finished result exists are skipped per ``config.overwrite``
    (reported to ``on_skip``); when all are, the task is not even loaded and the list is empty."""
    say = progress or (lambda message: None)
    if config.limit is not None and config.limit < 1:
        raise MtrbenchError(f"--limit must be a positive number of conversations, got {config.limit}")
    retriever_options = retriever_options or RetrieverOptions()
    strategies = [get_strategy(h) for h in config.histories]
    if any(s.model_kind for s in strategies) and config.rewriter is None:
        raise MtrbenchError(f"--history {', '.join(s.name for s in strategies if s.model_kind)} needs a rewriter "
                            "model: pass --rewriter-model (and --rewriter-base-url for a local server or hf://MODEL)")
    resolve_model(model)  # unknown names fail before anything slow starts
    card = resolve_card(task_name)
    if card.type != "conversational-retrieval" and "retrieval" not in card.type:
        raise MtrbenchError(f"task '{card.name}' is a {card.type} task, not a retrieval task: `mtrbench eval` "
                            f"evaluates retrievers (see `mtrbench tasks show {card.name}`)")
    k_values = list(config.k_values or card.k_values)
    measures = parse_measures(config.metrics or card.metrics, k_values)
    deepest = max(m.cutoff for m in measures)
    if config.top_k < deepest:
        raise MtrbenchError(f"--top-k {config.top_k} is smaller than the largest cutoff ({deepest})")
    main_key = card.main_score
    if main_key not in {m.key(card.relevance_level) for m in measures}:
        raise MtrbenchError(f"the task's main score {main_key} is not among the requested metrics/k values")

    started = time.perf_counter()
    if retriever is None:
        say(f"Loading model {model}")
        retriever = build_retriever(model, retriever_options)
    t_model = time.perf_counter() - started

    split = config.split or card.eval_split
    planned = {s.name: plan_strategy(s, config, retriever, retriever_options, card, split, measures, k_values)
               for s in strategies}
    todo = []
    for strategy in strategies:
        paths, settings = planned[strategy.name]
        if decide(paths.json, settings, config.overwrite).evaluate:
            todo.append(strategy)
        elif on_skip is not None:
            on_skip(SkippedResult(model, card.name, strategy.name, paths.json))
    strategies = todo
    if not strategies:
        return []

    t0 = time.perf_counter()
    say(f"Loading task {card.name} ({split})")
    task = load_task(card, split=config.split, data_dir=config.data_dir, corpus_path=config.corpus_path)
    if config.limit is not None:
        task = first_conversations(task, config.limit)
    t_load = time.perf_counter() - t0
    if config.skip_inapplicable and not task.has_rewrites:
        strategies = [s for s in strategies if s.name != "rewrite"]
    for strategy in strategies:
        check_strategy_applies(strategy, task.name, task.has_rewrites)
    rewriter_reports: dict[str, dict[str, Any]] = {}
    for i, strategy in enumerate(strategies):
        if strategy.model_kind:
            say(f"Asking {config.rewriter.judge.model} for {strategy.model_kind}s of {len(task.queries):,} queries")
            texts, report = compute_model_history(strategy.model_kind, task.queries, config.rewriter)
            if texts is None:  # dry run: the prompts were shown, nothing to evaluate
                continue
            strategies[i] = strategy.with_texts(texts)
            rewriter_reports[strategy.name] = report.as_dict()
            if report.failures:
                say(f"warning: {report.failures} {strategy.model_kind}(s) failed after retries; those queries use "
                    f"the full history (settings.rewriter.failures in the results)")
    if config.rewriter is not None and config.rewriter.dry_run:
        return []

    t0 = time.perf_counter()
    say(f"Indexing {len(task.corpus):,} documents")
    retriever.index(task.corpus)
    t_index = time.perf_counter() - t0

    candidates = None
    if any(q.candidate_doc_ids is not None for q in task.queries):
        candidates = [None if q.candidate_doc_ids is None else [task.corpus.position(d) for d in q.candidate_doc_ids]
                      for q in task.queries]

    results = []
    for strategy in strategies:
        t0 = time.perf_counter()
        truncator = Truncator(retriever.tokenizer, retriever.max_length, prompt=retriever.query_prompt,
                              side=config.truncate)
        texts = [truncator(strategy(q, config.fmt)) for q in task.queries]
        say(f"Searching {len(texts):,} queries (history={strategy.name})")
        hits = retriever.search(texts, config.top_k, candidates)
        run = hits_to_run(task, hits)
        t_search = time.perf_counter() - t0

        t0 = time.perf_counter()
        qrels = task.qrels()
        evaluation = evaluate(qrels, run, measures, relevance_level=card.relevance_level)
        scores = evaluation.scores()
        analyses = run_analyses(config.analyses, qrels, run, evaluation, measures)
        if "refined_qrels" not in analyses and {"original", "refined"} <= set(task.extra_qrels):
            comparison = refined_comparison(task.extra_qrels["original"], task.extra_qrels["refined"], run,
                                            measures, card.relevance_level)
            comparison.pop("_evaluations")
            analyses["refined_qrels"] = comparison
        breakdowns = {"turn": by_turn(evaluation, task.queries)}
        switch = by_topic_switch(evaluation, task.queries)
        if switch is not None:
            breakdowns["topic_switch"] = switch
        t_score = time.perf_counter() - t0

        n_no_qrels = sum(1 for q in task.queries if not q.qrels)
        rewriter = rewriter_reports.get(strategy.name)
        experiment = experiment_name(strategy.name, config, retriever, retriever_options.max_length is not None,
                                     rewriter["model"] if rewriter else None)
        paths, planned_settings = planned[strategy.name]
        settings = {**planned_settings, "retriever": retriever.settings(),  # as indexed (parent-child: child count)
                    **({"rewriter": rewriter} if rewriter else {})}  # identity as planned, plus the request counts
        extra = {
            "model": {"name": retriever.name, "revision": retriever.revision, "requested": model},
            "settings": settings,
            "experiment": experiment,
            "queries": {"total": len(task.queries), "evaluated": len(evaluation.per_query),
                        "excluded_without_positives": len(evaluation.excluded) + n_no_qrels},
            "corpus_size": len(task.corpus),
            "warnings": dict(task.warnings),
            "truncation": truncator.stats.as_dict(),
            "breakdowns": breakdowns,
            "confidence_intervals": confidence_intervals(evaluation, summary_keys(evaluation.metric_keys, main_key)),
            **analyses,
            "timings_s": {"load_model": round(t_model, 3), "load_task": round(t_load, 3),
                          "index_corpus": round(t_index, 3), "serialize_and_search": round(t_search, 3),
                          "score": round(t_score, 3)},
            "hardware": hardware(),
            **({"embedding_cache": asdict(retriever.cache_report)} if getattr(retriever, "cache_report", None) else {}),
            "command": config.command,
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "files": {"run": paths.run.name, "per_query": paths.per_query.name},
        }
        document = result_document(task_name=task.name, dataset_revision=task.dataset_revision, split=task.split,
                                   languages=list(card.languages), main_score_key=main_key, scores=scores,
                                   evaluation_time=t_load + t_index + t_search + t_score, extra=extra)
        by_qid = {q.qid: q for q in task.queries}
        per_query_rows = [{"qid": qid, "conversation_id": by_qid[qid].conversation_id, "turn_id": by_qid[qid].turn_id,
                           **values} for qid, values in evaluation.per_query.items()]
        write_result(paths, document, run, per_query_rows, run_tag=run_tag(model, strategy.name))
        revision_folder = result_paths(config.output_dir, retriever.name, retriever.revision, card.name, None).json.parent
        write_model_meta(revision_folder, model_meta(retriever))
        if experiment:
            write_model_meta(paths.json.parent, model_meta(retriever, experiment))
        results.append(StrategyResult(strategy.name, scores, main_key, evaluation, breakdowns,
                                      truncator.stats.as_dict(), paths, len(evaluation.per_query),
                                      len(evaluation.excluded) + n_no_qrels, analyses, dict(task.warnings)))
    say(f"Done in {time.perf_counter() - started:.1f}s")
    return results


def plan_strategy(strategy: HistoryStrategy, config: EvalConfig, retriever: Retriever, retriever_options: RetrieverOptions,
                  card, split: str, measures: list[Measure], k_values: list[int]) -> tuple[ResultPaths, dict[str, Any]]:
    """Where a strategy's result goes and the settings it records, known before the task is loaded (a model-backed
    history records its rewriter's identity here; the request counts are added once it has run)."""
    history = strategy.name
    rewriter = rewriter_identity(strategy.model_kind, config.rewriter) if strategy.model_kind else None
    truncator = Truncator(retriever.tokenizer, retriever.max_length, prompt=retriever.query_prompt,
                          side=config.truncate)
    experiment = experiment_name(history, config, retriever, retriever_options.max_length is not None,
                                 rewriter["model"] if rewriter else None)
    paths = result_paths(config.output_dir, retriever.name, retriever.revision, card.name, experiment)
    settings = {
        "history": history, "truncate": truncator.side, "query_format": asdict(config.fmt),
        "top_k": config.top_k, "k_values": k_values, "metrics": [str(m) for m in measures], "split": split,
        "relevance_level": card.relevance_level,
        "retriever": retriever.settings(),
        **({"pipeline": pipeline_slug(retriever)} if pipeline_slug(retriever) else {}),
        **({"limit": {"conversations": config.limit}} if config.limit is not None else {}),
        **({"rewriter": rewriter} if rewriter else {}),
    }
    return paths, settings


def command_line(argv: list[str]) -> str:
    """The reproducing command as recorded in results; a URL's user:password shows as ``***``."""
    import shlex

    from mtrbench.llm.redact import Redactor

    hide_userinfo = Redactor()
    return shlex.join(["mtrbench", *(hide_userinfo(a) if "://" in a else a for a in argv)])
