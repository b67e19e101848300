"""Step 6 of an evaluation: one history's result document (mteb's TaskResult layout plus the ``mtrbench`` block),
written with its run and per-query file as a :class:`Result`, and the model's ``model_meta.json``."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from mtrbench.analyses.report import confidence_intervals
from mtrbench.data.model import TaskData
from mtrbench.formats.run import run_tag
from mtrbench.pipeline.plan import EvalConfig, Plan, PlannedHistory
from mtrbench.pipeline.retrieval import Retrieved
from mtrbench.pipeline.scoring import Scored
from mtrbench.results.model_meta import model_meta, write_model_meta
from mtrbench.results.partial_corpus import KEY as PARTIAL_CORPUS
from mtrbench.results.result import QueryScores, Result, task_location
from mtrbench.results.table import summary_keys
from mtrbench.results.writer import hardware, result_document, result_paths
from mtrbench.retrieve.base import Retriever


@dataclass
class Timings:
    load_model: float
    load_task: float
    index_corpus: float

    def document(self, retrieved: Retrieved, scored: Scored) -> dict[str, float]:
        return {
            "load_model": round(self.load_model, 3),
            "load_task": round(self.load_task, 3),
            "index_corpus": round(self.index_corpus, 3),
            "serialize_and_search": round(retrieved.seconds, 3),
            "score": round(scored.seconds, 3),
        }


def write_history(
    plan: Plan,
    planned: PlannedHistory,
    task: TaskData,
    retriever: Retriever,
    config: EvalConfig,
    retrieved: Retrieved,
    scored: Scored,
    timings: Timings,
) -> Result:
    evaluation, card = scored.evaluation, plan.card
    history, experiment = planned.history, planned.experiment
    # identity as planned; the retriever's settings as indexed (parent-child: child count) and the request counts
    settings = planned.settings.after_run(retriever.settings(), history.report)
    n_no_qrels = sum(1 for q in task.queries if not q.qrels)
    warnings = {**task.warnings, **getattr(retriever, "warnings", {})}
    if history.excluded:
        warnings["queries left out: the rewriter failed on them (see settings.rewriter)"] = len(history.excluded)
    scores = evaluation.scores()
    extra = {
        "model": {"name": retriever.name, "revision": retriever.revision, "requested": plan.requested_model},
        "settings": settings.to_json(),
        "experiment": experiment,
        "main_score_key": card.main_score,
        "queries": {
            "total": len(task.queries) + len(history.excluded),
            "evaluated": len(evaluation.per_query),
            "excluded_without_positives": len(evaluation.excluded) + n_no_qrels,
            **({"excluded_rewriter_failed": len(history.excluded)} if history.excluded else {}),
        },
        "corpus_size": len(task.corpus),
        **({PARTIAL_CORPUS: scored.partial_corpus.to_json()} if scored.partial_corpus else {}),
        "warnings": dict(warnings),
        "truncation": retrieved.truncation,
        "breakdowns": scored.breakdowns,
        "confidence_intervals": confidence_intervals(evaluation, summary_keys(evaluation.metric_keys, card.main_score)),
        **scored.analyses,
        "timings_s": timings.document(retrieved, scored),
        "hardware": hardware(),
        **({"embedding_cache": asdict(retriever.cache_report)} if getattr(retriever, "cache_report", None) else {}),
        **task_location(card),  # a task given as a path: where it was (explore finds it from any folder)
        "command": config.command,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "files": {"run": planned.paths.run.name, "per_query": planned.paths.per_query.name},
    }
    seconds = timings.load_task + timings.index_corpus + retrieved.seconds + scored.seconds
    document = result_document(
        task_name=task.name,
        dataset_revision=task.dataset_revision,
        split=task.split,
        languages=list(card.languages),
        main_score_key=card.main_score,
        scores=scores,
        evaluation_time=seconds,
        extra=extra,
    )
    by_qid = {q.qid: q for q in task.queries}
    rows = [
        QueryScores(qid, by_qid[qid].conversation_id, by_qid[qid].turn_id, values)
        for qid, values in evaluation.per_query.items()
    ]
    result = Result(document, planned.paths.json, _per_query=rows)
    result.save(retrieved.run, run_tag=run_tag(plan.requested_model, history.name))
    _write_model_meta(retriever, config, card.name, planned)
    return result


def _write_model_meta(retriever: Retriever, config: EvalConfig, task_name: str, planned: PlannedHistory) -> None:
    revision_folder = result_paths(config.output_dir, retriever.name, retriever.revision, task_name, None).json.parent
    write_model_meta(revision_folder, model_meta(retriever))
    if planned.experiment:
        write_model_meta(planned.paths.json.parent, model_meta(retriever, planned.experiment))
