"""Step 5 of an evaluation: the measures (pytrec_eval, under the task's scoring protocol), the analyses asked
for, and the per-turn and topic-switch breakdowns of one history's run."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from mtrbench.analyses.breakdown import by_topic_switch, by_turn
from mtrbench.analyses.report import refined_comparison
from mtrbench.analyses.run import AnalysisOptions, run_analyses
from mtrbench.data.model import TaskData
from mtrbench.formats.run import Run
from mtrbench.measures import Evaluation, Measure
from mtrbench.measures.protocols import PROTOCOLS, TREC_EVAL, ScoringProtocol
from mtrbench.results.partial_corpus import PartialCorpus


@dataclass
class Scored:
    evaluation: Evaluation
    analyses: dict[str, Any]
    breakdowns: dict[str, Any]
    seconds: float
    partial_corpus: PartialCorpus | None = None  # judged passages the corpus lacks (recorded in the result)


def score(
    task: TaskData,
    run: Run,
    measures: list[Measure],
    relevance_level: int,
    analyses_options: AnalysisOptions,
    protocol: ScoringProtocol = PROTOCOLS[TREC_EVAL],
    partial_corpus: PartialCorpus | None = None,
) -> Scored:
    started = time.perf_counter()
    qrels = task.qrels()
    evaluation = protocol.score(qrels, run, measures, relevance_level)
    analyses = run_analyses(analyses_options, qrels, run, evaluation, measures)
    if "refined_qrels" not in analyses and {"original", "refined"} <= set(task.extra_qrels):
        comparison = refined_comparison(
            task.extra_qrels["original"], task.extra_qrels["refined"], run, measures, relevance_level
        )
        comparison.pop("_evaluations")
        analyses["refined_qrels"] = comparison
    breakdowns = {"turn": by_turn(evaluation, task.queries)}
    switch = by_topic_switch(evaluation, task.queries)
    if switch is not None:
        breakdowns["topic_switch"] = switch
    return Scored(evaluation, analyses, breakdowns, time.perf_counter() - started, partial_corpus)
