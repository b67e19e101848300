"""Skip a finished evaluation before the model loads: the plan an earlier run made for the same request.

Which result file a history writes, and the settings it is compared on, are known only once the retriever is
built (its resolved revision, token limit, prompts, dtype). Loading it can take longer than everything else a
re-run of a finished sweep does. So each plan is remembered, in ``$MTRBENCH_CACHE_DIR/plans`` (default
``~/.cache/mtrbench/plans``), under a key made of everything that decides it: the request (model specification,
every loading and scale option, the evaluation settings, the task card), mtrbench's version, the GPUs visible and
the versions of what the model's files come from. A re-run with the same key checks those files with the usual
overwrite rules (``results/overwrite.decide``): if every history is finished, nothing is loaded.

Only requests whose model files cannot change under the same key are remembered: BM25, models shipped as Python
packages (their version is in the key), and Hub models with a pinned revision; never a local folder, an unpinned
Hub id, a model object, a Python or model-written history, or a reranker. A missing or unreadable record means: load and plan.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import asdict, dataclass, fields
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from mtrbench import __version__
from mtrbench.data import resolve_card
from mtrbench.data.cards import TaskCard
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import MtrbenchError
from mtrbench.infra.numeric import json_text
from mtrbench.pipeline.plan import EvalConfig, Plan, SkippedResult
from mtrbench.results.overwrite import decide
from mtrbench.results.settings import ResultSettings
from mtrbench.retrieve.builder import ResolvedModel, resolve
from mtrbench.retrieve.options import RetrieverOptions
from mtrbench.retrieve.registry import ModelSpec

log = logging.getLogger(__name__)

FORMAT = "mtrbench-plan-1"
PACKAGE_PREFIX = "package:"


@dataclass(frozen=True)
class KnownHistory:
    history: str
    path: Path
    settings: dict[str, Any]  # the planned ResultSettings as JSON


def plans_folder() -> Path:
    root = os.environ.get("MTRBENCH_CACHE_DIR")
    return (Path(root) if root else Path.home() / ".cache" / "mtrbench") / "plans"


def _package_version(model_id: str) -> str | None:
    try:
        return metadata.version(model_id.removeprefix(PACKAGE_PREFIX))
    except metadata.PackageNotFoundError:
        return None


def _fixed_files(spec: ModelSpec, options: RetrieverOptions) -> list[str] | None:
    """What pins the model's files (package versions, revisions); None when nothing does."""
    if spec.kind == "lexical":
        try:
            return [f"bm25s {metadata.version('bm25s')}"]
        except metadata.PackageNotFoundError:
            return None
    if spec.kind == "hybrid":
        dense, sparse = resolve(spec.model_id).spec, resolve(spec.doc_model_id).spec
        parts = [_fixed_files(s, options) for s in (dense, sparse) if s is not None]
        return None if len(parts) != 2 or None in parts else [p for part in parts for p in part or []]
    if spec.kind not in ("dense", "sparse", "multi-vector") or spec.doc_model_id:  # DiSCo: an unpinned doc encoder
        return None
    if spec.model_id.startswith(PACKAGE_PREFIX):
        version = _package_version(spec.model_id)
        return None if version is None else [f"{spec.model_id} {version}"]
    revision = options.loading.revision or spec.revision
    return [f"{spec.model_id}@{revision}"] if revision else None


def request_key(
    model: ResolvedModel, task: str | TaskCard, config: EvalConfig, options: RetrieverOptions
) -> str | None:
    """The key of a request whose plan can be remembered; None when it cannot (module docstring)."""
    if model.spec is None or options.pipeline.rerank or config.rewriter is not None:
        return None
    if not all(isinstance(h, str) for h in config.histories):
        return None
    fixed = _fixed_files(model.spec, options)
    if fixed is None:
        return None
    card = task if isinstance(task, TaskCard) else resolve_card(task)
    loading = {k: v for k, v in asdict(options.loading).items() if k != "show_progress"}
    request = {
        "format": FORMAT,
        "mtrbench": __version__,
        "gpus": [os.environ.get("CUDA_VISIBLE_DEVICES"), torch.cuda.device_count()],  # device "auto" picks the dtype
        "model": model.requested,
        "spec": asdict(model.spec),
        "fixed": fixed,
        "loading": loading,
        "scale": asdict(options.scale),
        "pipeline": asdict(options.pipeline),
        "task": (str(Path(task).resolve()) if Path(task).exists() else task)
        if isinstance(task, str)
        else card.card_path,
        "card": card.to_dict(),
        "config": {
            **{f.name: getattr(config, f.name) for f in fields(config) if f.name not in ("command", "rewriter")},
            "output_dir": str(Path(config.output_dir).resolve()),
        },
    }
    canonical = json.dumps(request, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def remember(key: str | None, plan: Plan) -> None:
    """Record where each planned history's result goes and its settings (nothing when ``key`` is None)."""
    if key is None:
        return
    histories = [
        {"history": name, "path": str(path), "settings": settings.to_json()}
        for name, path, settings in plan.all_planned
    ]
    try:
        path = plans_folder() / f"{key}.json"
        atomic_write_text(path, json_text({"format": FORMAT, "histories": histories}, path=path))
    except (OSError, ValueError, MtrbenchError) as exc:  # unwritable: the next re-run loads the model, that is all
        log.debug("plan not remembered: %s", exc)


def _known(key: str) -> list[KnownHistory] | None:
    try:
        document = json.loads((plans_folder() / f"{key}.json").read_text(encoding="utf-8"))
        if document.get("format") != FORMAT:
            return None
        return [KnownHistory(h["history"], Path(h["path"]), dict(h["settings"])) for h in document["histories"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def finished_before_loading(
    model: ResolvedModel, task: str | TaskCard, config: EvalConfig, options: RetrieverOptions
) -> list[SkippedResult] | None:
    """The skipped results when an earlier plan of this request says every history is finished under
    ``config.overwrite``; None when the model must be loaded (nothing known, or something to evaluate)."""
    key = request_key(model, task, config, options)
    return known_finished(key, model.requested, task, config.overwrite) if key is not None else None


def known_finished(key: str, requested: str, task: str | TaskCard, overwrite: str) -> list[SkippedResult] | None:
    known = _known(key)
    if not known:
        return None
    for history in known:
        if decide(history.path, ResultSettings.from_json(history.settings), overwrite).evaluate:
            return None
    card_name = task.name if isinstance(task, TaskCard) else resolve_card(task).name
    return [SkippedResult(requested, card_name, h.history, h.path) for h in known]
