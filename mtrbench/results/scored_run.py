"""A TREC run scored against qrels (``mtrbench score --run``, and an iKAT run over its task): the evaluation, the
queries it leaves out and why, its one-line title and its ``--output`` JSON."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mtrbench.infra.errors import MtrbenchError

if TYPE_CHECKING:
    from mtrbench.formats.qrels import Qrels
    from mtrbench.formats.run import Run
    from mtrbench.measures.base import Measure
    from mtrbench.measures.compute import Evaluation
    from mtrbench.measures.protocols import ScoringProtocol


@dataclass
class ScoredRun:
    """A run scored against qrels, with the queries the scores leave out (counted in the title and the file)."""

    run_path: str
    qrels_source: str
    protocol: ScoringProtocol
    evaluation: Evaluation
    unjudged_run_queries: list[str]  # in the run, without qrels: ignored
    judged_without_run: list[str]  # judged, not answered by the run: scored 0
    skipped: list[str]  # judged, absent from the run, left out by the protocol (MTRAG)

    def title(self) -> str:
        evaluation = self.evaluation
        return (
            f"{Path(self.run_path).name}: {len(evaluation.per_query)} queries evaluated, "
            f"{len(evaluation.excluded)} without positives excluded, "
            f"{len(self.unjudged_run_queries)} run queries without qrels ignored"
            + (
                f", {len(self.judged_without_run)} judged queries absent from the run (scored 0)"
                if self.judged_without_run
                else ""
            )
            + (f", {len(self.skipped)} judged queries absent from the run skipped" if self.skipped else "")
            + (f" · protocol {self.protocol.setting}" if self.protocol.is_official else "")
        )

    def report(self, scores: dict[str, float], analyses: dict) -> dict:
        """The --output JSON."""
        from mtrbench.analyses.report import confidence_intervals  # deferred: loads pytrec_eval

        evaluation = self.evaluation
        return {
            "run": str(self.run_path),
            "qrels": self.qrels_source,
            "relevance_level": evaluation.relevance_level,
            "protocol": self.protocol.setting,
            "measures": {key: str(m) for key, m in evaluation.measures.items()},
            "scores": scores,
            "confidence_intervals": confidence_intervals(evaluation, evaluation.metric_keys),
            "queries": {
                "evaluated": len(evaluation.per_query),
                "excluded_without_positives": len(evaluation.excluded),
                "run_queries_without_qrels": len(self.unjudged_run_queries),
                "judged_without_run": len(self.judged_without_run),
                "judged_skipped": len(self.skipped),
            },
            **analyses,
            "per_query": evaluation.per_query,
        }


def score_run(
    run_path: str,
    qrels_source: str,
    protocol: ScoringProtocol,
    qrels: Qrels,
    run: Run,
    measures: list[Measure],
    relevance_level: int,
) -> ScoredRun:
    """``run`` scored under ``protocol``; a run that answers none of the judged queries is refused (a wrong file)."""
    from mtrbench.measures.protocols import RoundedEvaluation  # deferred: loads pytrec_eval

    unjudged_run_queries = sorted(set(run) - set(qrels))
    evaluation = protocol.score(qrels, run, measures, relevance_level)
    skipped = evaluation.skipped if isinstance(evaluation, RoundedEvaluation) else []  # MTRAG: absent from the run
    # Judged queries the run does not answer score 0 (as they should), but say how many: often a wrong file.
    judged_without_run = sorted(set(evaluation.per_query) - set(run))
    if len(judged_without_run) == len(evaluation.per_query):
        raise MtrbenchError(
            f"run {run_path} has none of the {len(judged_without_run)} judged queries of "
            f"{qrels_source}: are they of the same task?"
        )
    return ScoredRun(run_path, qrels_source, protocol, evaluation, unjudged_run_queries, judged_without_run, skipped)


def task_qrels(task: str, split: str | None, data_dir: str | None) -> tuple[str, dict[str, dict[str, int]], int]:
    """(where the qrels came from, the qrels, the card's relevance level) of one split of a task."""
    from mtrbench.data import load_task, resolve_card  # deferred: loads the task loaders

    card = resolve_card(task)
    data = load_task(card, split=split, data_dir=data_dir, require_corpus=False)
    qrels = data.qrels()
    if not qrels:
        raise MtrbenchError(f"task '{card.name}' ({data.split}) has no qrels to score against")
    return f"task {card.name} ({data.split})", qrels, card.relevance_level


__all__ = ["ScoredRun", "score_run", "task_qrels"]
