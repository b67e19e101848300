"""The analyses a run can ask for beyond its scores, shared by ``run_eval`` and ``mtrbench score``: the
comparison with refined qrels (scores on both, differences, BRIDGE Hole@k) and RAGAlign against
per-query generation outcomes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtrbench.analyses.report import (
    DEFAULT_RAGALIGN_BINARY,
    DEFAULT_RAGALIGN_CONTINUOUS,
    ragalign_report,
    refined_comparison,
)
from mtrbench.formats.qrels import Qrels, read_qrels
from mtrbench.formats.run import Run
from mtrbench.formats.verdicts import read_generation_judgments
from mtrbench.measures import Evaluation, Measure


@dataclass(frozen=True)
class AnalysisOptions:
    refined_qrels: str | Path | None = None  # TREC qrels file, e.g. BRIDGE's
    generation_judgments: str | Path | None = None  # per-query binary outcomes: JSONL qid/label or TSV
    ragalign_metric: str = DEFAULT_RAGALIGN_BINARY  # binary retrieval metric
    ragalign_continuous: str = DEFAULT_RAGALIGN_CONTINUOUS  # metric for the point-biserial correlation


def run_analyses(
    options: AnalysisOptions, qrels: Qrels, run: Run, evaluation: Evaluation, measures: Sequence[Measure]
) -> dict[str, Any]:
    """``{"refined_qrels": ..., "ragalign": ...}``, each key only when asked for. With refined qrels,
    RAGAlign is reported on both the original and the refined judgments."""
    out: dict[str, Any] = {}
    evaluations = {"qrels": evaluation}
    if options.refined_qrels:
        comparison = refined_comparison(
            qrels, read_qrels(options.refined_qrels), run, measures, evaluation.relevance_level
        )
        evaluations = dict(zip(("original", "refined"), comparison.pop("_evaluations")))
        out["refined_qrels"] = comparison
    if options.generation_judgments:
        generation = read_generation_judgments(options.generation_judgments)
        out["ragalign"] = ragalign_report(evaluations, generation, options.ragalign_metric, options.ragalign_continuous)
    return out
