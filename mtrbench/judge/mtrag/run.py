"""``mtrbench judge mtrag``: MTRAG's generation metrics for a prediction file, in the official output layout.

predictions -> LLM judges (cost first, resumable) -> algorithmic metrics (BERTScore batched, logged) -> RB_agg ->
conditioned variants -> ``metrics.jsonl`` (each input record with ``metrics: {name: [values]}``) and
``summary.json`` (means per answerability class and overall, harmonic means).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mtrbench import __version__
from mtrbench.formats.mtrag_eval import MtragTask, read_tasks, task_record
from mtrbench.infra.atomic import atomic_write_text, ensure_folder
from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.infra.numeric import json_text
from mtrbench.judge.mtrag.algorithmic import Metrics
from mtrbench.judge.mtrag.bertscore import BertScoreOptions, BertScorer
from mtrbench.judge.mtrag.conditioning import idk_conditioned, idk_underspecified_conditioned
from mtrbench.judge.mtrag.human import mtrag_ppi, read_mtrag_human_labels
from mtrbench.judge.mtrag.judges import LlmJudgements, LlmJudgeOptions, run_llm_judges
from mtrbench.judge.mtrag.names import ALGORITHMIC_METRICS, ALL_METRICS, BERTSCORE_METRICS, LLM_METRICS
from mtrbench.judge.mtrag.resume import algorithmic_with_log, pending_tasks
from mtrbench.judge.mtrag.summary import summarize
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig

CONDITIONED = ("RB_agg", "RL_F", "RB_llm")
METRICS_NAME = "metrics.jsonl"
SUMMARY_NAME = "summary.json"


@dataclass
class MtragJudgeOptions:
    output_dir: Path
    metrics: tuple[str, ...] = ALGORITHMIC_METRICS
    bertscore: BertScoreOptions = field(default_factory=BertScoreOptions)
    judges: tuple[JudgeConfig, ...] = ()
    dry_run: bool = False
    yes: bool = False
    show_progress: bool = True
    human_labels: str | None = None  # PPI of human_metric's mean with these human labels (judge.mtrag.human)
    human_metric: str = "RB_llm"

    def check(self) -> None:
        unknown = [m for m in self.metrics if m not in ALL_METRICS]
        if unknown:
            raise UserInputError(f"unknown MTRAG metric(s) {', '.join(unknown)}; known: {', '.join(ALL_METRICS)}")
        if not self.metrics:
            raise UserInputError("no metric asked")
        if set(self.metrics) & set(LLM_METRICS) and not self.judges:
            raise UserInputError(
                f"{', '.join(m for m in self.metrics if m in LLM_METRICS)} need an LLM judge: "
                "pass --llm-model MODEL (and --llm-base-url URL) or --judges FILE"
            )


@dataclass
class MtragJudgeOutcome:
    metrics_path: Path
    summary_path: Path
    summary: dict[str, object]
    llm: LlmJudgements | None


def parse_metric_list(text: str | None, with_llm: bool) -> tuple[str, ...]:
    """A comma list of official names; by default the algorithmic ones, plus the LLM ones when a judge is given."""
    if not text:
        return ALL_METRICS if with_llm else ALGORITHMIC_METRICS
    return tuple(dict.fromkeys(m.strip() for m in text.split(",") if m.strip()))


def _check_tasks(tasks: Sequence[MtragTask], metrics: Sequence[str], path: Path) -> None:
    for task in tasks:
        if not task.predictions:
            raise DataError(f"{path}: task {task.task_id} has no 'predictions' (the answer to score)")
        needs_target = {"Recall", "RougeL_stemFalse", "BertscoreP", "BertscoreR", "Length", "RB_llm"}
        if not task.targets and needs_target & set(metrics):
            raise DataError(
                f"{path}: task {task.task_id} has no 'targets' (reference answer), which "
                f"{', '.join(sorted(needs_target & set(metrics)))} need"
            )


def _add_conditioned(metrics: Metrics, answerability: str | None) -> None:
    """The official ``*_idk_underspecified`` (and ``*_idk``) variants of RB_agg, RL_F and RB_llm."""
    if "idk_eval" not in metrics:
        return
    idk = metrics["idk_eval"][0]
    clarification = metrics["underspecified_eval"][0] if "underspecified_eval" in metrics else None
    for name in CONDITIONED:
        if name not in metrics:
            continue
        value = metrics[name][0]
        metrics[f"{name}_idk"] = [idk_conditioned(value, answerability, idk)]
        if "underspecified_eval" in metrics:
            metrics[f"{name}_idk_underspecified"] = [
                idk_underspecified_conditioned(value, answerability, idk, clarification)
            ]


def _json_value(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _nan_as_null(value: object) -> object:
    """An input record's own fields with NaN as null, as pandas (the official scripts' writer) writes it: a pandas
    file reads a missing list as NaN. An infinity stays, and the writer refuses it."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {name: _nan_as_null(item) for name, item in value.items()}
    if isinstance(value, list):
        return [_nan_as_null(item) for item in value]
    return value


def judge_mtrag(
    predictions: str | Path, options: MtragJudgeOptions, cache: ResponseCache | None = None
) -> MtragJudgeOutcome | None:
    """Score a prediction file; None after a dry run."""
    options.check()
    path = Path(predictions)
    tasks = read_tasks(path)
    _check_tasks(tasks, options.metrics, path)
    human = None
    if options.human_labels:  # a bad file fails before any judge is asked
        ids = [t.task_id for t in tasks]
        human = read_mtrag_human_labels(options.human_labels, options.human_metric, options.metrics, ids)
    output_dir = ensure_folder(options.output_dir)
    scorer = BertScorer(options.bertscore) if set(options.metrics) & set(BERTSCORE_METRICS) else None
    settings = options.bertscore.describe() if scorer is not None else None
    if scorer is not None:
        scorer.check()  # a missing baseline fails before any LLM request
        if not options.dry_run and pending_tasks(tasks, options.metrics, settings, output_dir):
            scorer.load()  # and so does a model that cannot be loaded
    llm = None
    if set(options.metrics) & set(LLM_METRICS):
        llm = run_llm_judges(
            tasks,
            options.judges,
            LlmJudgeOptions(
                output_dir=output_dir,
                metrics=options.metrics,
                dry_run=options.dry_run,
                yes=options.yes,
                show_progress=options.show_progress,
            ),
            cache,
        )
        if llm is None:
            return None
    per_task = algorithmic_with_log(tasks, options.metrics, scorer, settings, output_dir)
    rows, instances = [], []
    for task, metrics in zip(tasks, per_task):
        for name, by_task in llm.values.items() if llm is not None else ():
            if task.task_id in by_task:
                metrics[name] = [by_task[task.task_id]]
        _add_conditioned(metrics, task.answerability)
        instances.append((task.answerability, metrics))
        record = _nan_as_null(task_record(task))
        record["metrics"] = {name: [_json_value(v) for v in values] for name, values in metrics.items()}
        rows.append(json_text(record, path=f"{output_dir / METRICS_NAME}:{len(rows) + 1}", ensure_ascii=False))
    summary = summarize(instances)
    summary = {
        "predictions": str(path),
        "mtrbench_version": __version__,
        "metrics_asked": list(options.metrics),
        "bertscore": settings,
        "judges": [{"name": j.name, "model": j.model} for j in options.judges],
        **summary,
    }
    if human is not None and llm is not None:
        summary["judge_ppi"] = mtrag_ppi(llm.values.get(human.metric, {}), human)
    metrics_path, summary_path = output_dir / METRICS_NAME, output_dir / SUMMARY_NAME
    atomic_write_text(metrics_path, "\n".join(rows) + "\n")
    atomic_write_text(summary_path, json_text(summary, path=summary_path, indent=2, ensure_ascii=False) + "\n")
    return MtragJudgeOutcome(metrics_path=metrics_path, summary_path=summary_path, summary=summary, llm=llm)
