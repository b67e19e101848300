"""``model_meta.json`` beside results, with the fields of mteb's ``ModelMeta`` (mteb 2.x).

mteb's ``ResultCache`` reads ``<model>/<revision>/model_meta.json`` for a result folder's identity
(``name``, ``revision``) and, in an ``experiments/<slug>/`` folder, its ``experiment_kwargs`` (mteb
skips an experiment folder without one). Without the file, ``load_results`` needs
``require_model_meta=False``. mteb's model validates with ``extra="forbid"``, so only its own keys
are written; what mtrbench cannot know (release date, license, training data) is null, as mteb
writes for an unknown model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.numeric import json_text

MODEL_META_FILE = "model_meta.json"

_FRAMEWORKS = {"dense": ["Sentence Transformers", "PyTorch"], "dual": ["Transformers", "PyTorch"], "sparse": ["NumPy"]}


def _kind(settings: dict[str, Any]) -> str:
    kind = settings.get("kind")
    if kind is None and isinstance(settings.get("dense"), dict):
        return "hybrid"
    return str(kind or "dense")


class DescribedModel(Protocol):
    """What ``model_meta`` reads of a retriever (``retrieve.base.Retriever`` has it; an optional
    ``query_prompt`` is read when present)."""

    name: str
    revision: str
    max_length: int | None

    def settings(self) -> dict[str, Any]: ...


def model_meta(retriever: DescribedModel, experiment: str | None = None) -> dict[str, Any]:
    """mteb ``ModelMeta.to_dict()`` fields for ``retriever``; ``experiment``: the experiment folder's slug."""
    settings = retriever.settings()
    kind = _kind(settings)
    model_type = {"sparse": ["sparse"], "hybrid": ["hybrid"]}.get(kind, ["dense"])
    if settings.get("rerank"):
        model_type = [*model_type, "cross-encoder"]
    similarity = settings.get("similarity")
    hub_id = "/" in retriever.name and not Path(retriever.name).exists()
    return {
        "loader_kwargs": {},
        "name": retriever.name,
        "revision": retriever.revision,
        "release_date": None,
        "languages": None,
        "n_parameters": None,
        "n_active_parameters_override": None,
        "n_embedding_parameters": None,
        "memory_usage_mb": None,
        "max_tokens": float(retriever.max_length) if retriever.max_length else None,
        "embed_dim": None,
        "license": None,
        "open_weights": True if hub_id else None,
        "public_training_code": None,
        "public_training_data": None,
        "framework": _FRAMEWORKS.get(kind, ["PyTorch"]),
        "reference": f"https://huggingface.co/{retriever.name}" if hub_id else None,
        "similarity_fn_name": similarity if similarity in ("cosine", "dot") else None,
        "use_instructions": bool(getattr(retriever, "query_prompt", None)),
        "training_datasets": None,
        "adapted_from": None,
        "superseded_by": None,
        "modalities": ["text"],
        "model_type": model_type,
        "citation": None,
        "contacts": None,
        "experiment_kwargs": {"mtrbench_experiment": experiment} if experiment else None,
        "output_dtypes": None,
        "extra_requirements_groups": None,
        "loader": None,
    }


def write_model_meta(folder: Path, meta: dict[str, Any]) -> None:
    """Written when missing or different, atomically: several runs may share a folder."""
    path = Path(folder) / MODEL_META_FILE
    text = json_text(meta, path=path, indent=4) + "\n"
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except OSError:
        pass
    atomic_write_text(path, text)
