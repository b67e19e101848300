"""Result files in mteb's layout: ``<output>/<org__model>/<revision>/[experiments/<slug>/]<task>.json``.

The JSON keeps mteb's top-level keys (``task_name``, ``dataset_revision``, ``scores`` per split
with ``main_score``, ``evaluation_time``) and puts everything mtrbench adds (settings, counts,
breakdowns, truncation) under ``mtrbench``. Beside it: the TREC run and per-query metrics.
"""

from __future__ import annotations

import json
import platform
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtrbench import __version__
from mtrbench.metrics.trec_io import Run, atomic_write_text, format_run


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text.replace("/", "__")).strip("_") or "unnamed"


@dataclass
class ResultPaths:
    json: Path
    run: Path
    per_query: Path


def result_paths(output_dir: Path, model_name: str, revision: str, task: str, experiment: str | None) -> ResultPaths:
    folder = Path(output_dir) / safe_name(model_name) / safe_name(revision)
    if experiment:
        folder = folder / "experiments" / safe_name(experiment)
    stem = safe_name(task)
    return ResultPaths(folder / f"{stem}.json", folder / f"{stem}.run.trec", folder / f"{stem}.per_query.jsonl")


def hardware() -> dict[str, Any]:
    import os

    import torch

    info: dict[str, Any] = {"platform": platform.platform(), "python": platform.python_version(),
                            "cpu_count": os.cpu_count(), "torch": torch.__version__}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        info["gpu_count"] = torch.cuda.device_count()
    return info


def write_result(paths: ResultPaths, document: dict[str, Any], run: Run, per_query_rows: list[dict[str, Any]],
                 run_tag: str) -> None:
    atomic_write_text(paths.run, format_run(run, run_tag))
    atomic_write_text(paths.per_query, "".join(json.dumps(row) + "\n" for row in per_query_rows))
    atomic_write_text(paths.json, json.dumps(document, indent=2) + "\n")


def result_document(*, task_name: str, dataset_revision: str | None, split: str, languages: list[str],
                    main_score_key: str, scores: dict[str, float], evaluation_time: float,
                    extra: dict[str, Any]) -> dict[str, Any]:
    split_scores = {"hf_subset": "default", "languages": languages, "main_score": scores[main_score_key], **scores}
    return {
        "dataset_revision": dataset_revision or "local",
        "task_name": task_name,
        "mteb_version": None,
        "scores": {split: [split_scores]},
        "evaluation_time": round(evaluation_time, 3),
        "kg_co2_emissions": None,
        "mtrbench": {"version": __version__, **extra},
    }
