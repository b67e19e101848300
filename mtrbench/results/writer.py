"""Result files in mteb's layout: ``<output>/<org__model>/<revision>/[experiments/<slug>/]<task>.json``.

The JSON is a valid mteb ``TaskResult`` document (``mteb.TaskResult.from_disk`` loads it, with no
task-registry lookup and no network): ``dataset_revision``, ``task_name``, ``mteb_version``,
``scores`` per split as a list of subsets, each with ``hf_subset``, ``languages`` ("eng-Latn") and
``main_score`` beside every metric, ``evaluation_time``, ``kg_co2_emissions`` and ``date``.
Everything mtrbench adds (settings, counts, breakdowns, truncation) is under ``mtrbench``, a key
mteb's reader ignores. Beside the JSON: the TREC run and per-query metrics.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from mtrbench import __version__
from mtrbench.formats.run import Run, format_run
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.numeric import json_lines, json_text
from mtrbench.serialize.history import DEFAULT_HISTORY, QueryFormat
from mtrbench.serialize.truncate import DEFAULT_TRUNCATE

# Written as ``mteb_version`` when mteb is not installed: the oldest mteb whose result format this
# file follows and that today's ``TaskResult.from_disk`` reads as-is. Files claiming < 1.11.0 are
# converted through mteb's task registry, and < 1.12.48 get a pair-classification fix-up that also
# looks the task up; either lookup fails for a task mteb does not know, such as every mtrbench task.
MTEB_RESULT_FORMAT_VERSION = "1.12.48"

HF_SUBSET = "default"  # mtrbench tasks have one subset per split, as mteb's monolingual tasks do

# ISO 639-3 -> ISO 15924 script for languages not written in Latin script (mteb's "eng-Latn" form).
_SCRIPTS = {
    "zho": "Hans",
    "cmn": "Hans",
    "yue": "Hant",
    "jpn": "Jpan",
    "kor": "Hang",
    "rus": "Cyrl",
    "ukr": "Cyrl",
    "bul": "Cyrl",
    "srp": "Cyrl",
    "mkd": "Cyrl",
    "bel": "Cyrl",
    "kaz": "Cyrl",
    "ara": "Arab",
    "fas": "Arab",
    "urd": "Arab",
    "heb": "Hebr",
    "hin": "Deva",
    "mar": "Deva",
    "nep": "Deva",
    "ben": "Beng",
    "tam": "Taml",
    "tel": "Telu",
    "kan": "Knda",
    "mal": "Mlym",
    "guj": "Gujr",
    "pan": "Guru",
    "tha": "Thai",
    "ell": "Grek",
    "kat": "Geor",
    "hye": "Armn",
    "amh": "Ethi",
    "khm": "Khmr",
    "lao": "Laoo",
    "mya": "Mymr",
    "sin": "Sinh",
}


def mteb_language(code: str) -> str:
    """``eng`` -> ``eng-Latn``; a code that already names its script is kept."""
    return code if "-" in code else f"{code}-{_SCRIPTS.get(code, 'Latn')}"


def mteb_version() -> tuple[str, str]:
    """(version, where it came from): the installed mteb's, read without importing it (slow), else the format's."""
    try:
        return metadata.version("mteb"), "installed"
    except metadata.PackageNotFoundError:
        return MTEB_RESULT_FORMAT_VERSION, "result-format minimum (mteb not installed)"


def dataset_revision_label(revision: str | None) -> str:
    """mteb needs a string; data read from a local folder (or a Hub revision nobody pinned) has none."""
    return revision or "local"


def experiment_slug(
    *,
    history: str,
    truncate: str,
    truncation_applies: bool,
    fmt: dict[str, Any],
    max_length: int | None,
    dtype: str | None = None,
    pipeline: dict[str, Any] | None = None,
    limit: int | None = None,
    kind: str | None = None,
) -> str | None:
    """None for mtrbench's default settings (mteb's plain layout); else a readable slug of what differs.

    Shared by result folders (``experiments/<slug>``) and mteb task names, so both always agree. ``kind``: a model
    kind that names its results' folders (results/settings.py FOLDER_KINDS), first.
    """

    parts = [f"kind={kind}"] if kind else []
    if history != DEFAULT_HISTORY:
        parts.append(f"history={history.replace(':', '-')}")
    if truncate != DEFAULT_TRUNCATE and truncation_applies:
        parts.append(f"truncate={truncate}")
    if fmt != asdict(QueryFormat()):
        digest = hashlib.sha256(json.dumps(fmt, sort_keys=True).encode()).hexdigest()[:8]
        parts.append(f"format={digest}")
    if max_length is not None:
        parts.append(f"maxlen={max_length}")
    if dtype not in (None, "fp32"):
        parts.append(f"dtype={dtype}")
    # pipeline stages (hybrid alpha and candidates, reranker and depth), in the order given; None: not set
    parts.extend(
        f"{key}={str(value).replace('/', '__')}" for key, value in (pipeline or {}).items() if value is not None
    )
    if limit is not None:  # a partial run never shares a folder (or a name) with a full one
        parts.append(f"limit={limit}")
    return "__".join(parts) or None


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text.replace("/", "__")).strip("_") or "unnamed"


@dataclass
class ResultPaths:
    json: Path
    run: Path
    per_query: Path

    @property
    def rewriter_log(self) -> Path:
        """A model-backed history's failed requests and malformed replies (redacted), beside its result."""
        return self.json.with_name(f"{self.json.stem}.rewriter.jsonl")


def result_paths(output_dir: Path, model_name: str, revision: str, task: str, experiment: str | None) -> ResultPaths:
    folder = Path(output_dir) / safe_name(model_name) / safe_name(revision)
    if experiment:
        folder = folder / "experiments" / safe_name(experiment)
    stem = safe_name(task)
    return ResultPaths(folder / f"{stem}.json", folder / f"{stem}.run.trec", folder / f"{stem}.per_query.jsonl")


def hardware() -> dict[str, Any]:
    import os

    import torch

    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        info["gpu_count"] = torch.cuda.device_count()
    return info


def write_result(
    paths: ResultPaths, document: dict[str, Any], run: Run, per_query_rows: list[dict[str, Any]], run_tag: str
) -> None:
    atomic_write_text(paths.run, format_run(run, run_tag))
    atomic_write_text(paths.per_query, json_lines(per_query_rows, path=paths.per_query))
    atomic_write_text(paths.json, json_text(document, path=paths.json, indent=2) + "\n")


def _timestamp(iso_date: Any) -> float:
    """mteb stores ``date`` as a POSIX timestamp; reuse the run's own ISO date when it has one."""
    if isinstance(iso_date, str):
        try:
            return datetime.fromisoformat(iso_date.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return time.time()


def result_document(
    *,
    task_name: str,
    dataset_revision: str | None,
    split: str,
    languages: list[str],
    main_score_key: str,
    scores: dict[str, float],
    evaluation_time: float,
    extra: dict[str, Any],
) -> dict[str, Any]:
    version, version_source = mteb_version()
    split_scores = {
        **scores,
        "hf_subset": HF_SUBSET,
        "languages": [mteb_language(code) for code in languages],
        "main_score": scores[main_score_key],
    }
    return {
        "dataset_revision": dataset_revision_label(dataset_revision),
        "task_name": task_name,
        "mteb_version": version,
        "scores": {split: [split_scores]},
        "evaluation_time": round(evaluation_time, 3),
        "kg_co2_emissions": None,
        "date": _timestamp(extra.get("date")),
        "mtrbench": {"version": __version__, "mteb_version_source": version_source, **extra},
    }
