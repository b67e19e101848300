"""``judge mtrag --human-labels FILE``: an LLM metric's mean corrected by human labels of some tasks (PPI).

A human label names its task by ``task_id``. RB_llm labels are the 1-10 rating a person gives, compared as
rating / 10 (RB_llm's own reading of a judge's rating); idk_eval and underspecified_eval labels are yes/no (1/0).
RL_F, a share of supported statements, has no single human label and is not offered. A task whose LLM value is
missing (failed, or idk_eval's "unknown") is left out of the estimate and counted."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from mtrbench.analyses.ppi import LabelScale, PPIEstimate, ppi_mean, read_human_labels
from mtrbench.infra.errors import UserInputError

SCALES = {
    "RB_llm": LabelScale("RB_llm rating 1-10", {str(v): v / 10 for v in range(1, 11)}),
    "idk_eval": LabelScale.binary("idk_eval yes/no"),
    "underspecified_eval": LabelScale.binary("underspecified_eval yes/no"),
}


@dataclass(frozen=True)
class MtragHumanLabels:
    metric: str
    labels: dict[str, float]  # task id -> the human's value, on the metric's scale


def read_mtrag_human_labels(
    path: str, metric: str, metrics: Collection[str], task_ids: Collection[str]
) -> MtragHumanLabels:
    """Checked before any judge is asked: the metric is one asked for and has a human scale, the ids are tasks."""
    if metric not in SCALES:
        raise UserInputError(f"--human-metric must be one of {', '.join(SCALES)}, got '{metric}'")
    if metric not in metrics:
        raise UserInputError(f"--human-metric {metric} is not among the metrics asked ({', '.join(metrics)})")
    return MtragHumanLabels(metric, read_human_labels(path, SCALES[metric], known_ids=set(task_ids)))


def mtrag_ppi(values: Mapping[str, float | None], human: MtragHumanLabels, alpha: float = 0.05) -> dict[str, object]:
    """The metric's PPI estimate over the tasks the judge answered, as written in summary.json."""
    llm = {task: float(v) for task, v in values.items() if v is not None}
    answered = {task: v for task, v in human.labels.items() if task in llm}
    estimate: PPIEstimate = ppi_mean(llm, answered, alpha)
    return {
        "metric": human.metric,
        **estimate.as_dict(),
        "human_labels": len(human.labels),
        "without_llm_value": len(human.labels) - len(answered),
    }
