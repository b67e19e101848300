"""``model_meta.json`` beside results, with the fields of mteb's ``ModelMeta`` (mteb 2.x).

mteb's ``ResultCache`` reads ``<model>/<revision>/model_meta.json`` for a result folder's identity
(``name``, ``revision``) and, in an ``experiments/<slug>/`` folder, its ``experiment_kwargs`` (mteb
skips an experiment folder without one). Without the file, ``load_results`` needs
``require_model_meta=False``. mteb's model validates with ``extra="forbid"``, so only its own keys
are written. What an alias records (models/aliases: release date, size, dimension, licence, training data)
is filled in; what nobody recorded is null, as mteb writes for an unknown model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.numeric import json_text
from mtrbench.models.spec import ModelSpec

MODEL_META_FILE = "model_meta.json"

_FRAMEWORKS = {
    "dense": ["Sentence Transformers", "PyTorch"],
    "dual": ["Transformers", "PyTorch"],
    "sparse": ["NumPy"],  # BM25 (its settings' kind since before learned sparse models)
    "learned-sparse": ["Sentence Transformers", "PyTorch"],
    "multi-vector": ["Sentence Transformers", "PyTorch"],
}
# A retriever's recorded similarity -> mteb 2.x's ScoringFunction
SIMILARITIES = {"cosine": "cosine", "dot": "dot", "maxsim": "MaxSim"}
# A retriever's kind -> mteb 2.x's ModelMeta.model_type (its MODEL_TYPES: dense, cross-encoder, late-interaction,
# sparse, router, hybrid); any other kind reads as dense.
MODEL_TYPES = {"sparse": "sparse", "learned-sparse": "sparse", "multi-vector": "late-interaction", "hybrid": "hybrid"}


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
    model_type = [MODEL_TYPES.get(kind, "dense")]
    spec = model_spec(retriever)
    if settings.get("rerank"):
        model_type = [*model_type, "cross-encoder"]
    similarity = settings.get("similarity")
    hub_id = "/" in retriever.name and not Path(retriever.name).exists()
    return {
        "loader_kwargs": {},
        "name": retriever.name,
        "revision": retriever.revision,
        "release_date": spec.release_date or None if spec else None,
        "languages": None,
        "n_parameters": spec.parameters if spec else None,
        "n_active_parameters_override": None,
        "n_embedding_parameters": None,
        "memory_usage_mb": None,
        "max_tokens": _max_tokens(retriever, spec),
        "embed_dim": spec.embedding_dim if spec else None,
        "license": spec.license or None if spec else None,
        "open_weights": True if hub_id else None,
        "public_training_code": None,
        "public_training_data": None,
        "framework": _FRAMEWORKS.get(kind, ["PyTorch"]),
        "reference": spec.reference if spec and spec.reference else _hub_page(retriever.name) if hub_id else None,
        "similarity_fn_name": SIMILARITIES.get(str(similarity)),
        "use_instructions": bool(getattr(retriever, "query_prompt", None)),
        "training_datasets": list(spec.training_data) if spec and spec.training_data else None,
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


def model_spec(retriever: object) -> ModelSpec | None:
    """The alias metadata behind a retriever (``retriever.spec``), through the stages that wrap it (``inner``)."""
    for _ in range(8):  # a reranker around a parent-child retriever around a model, at most a few deep
        spec = getattr(retriever, "spec", None)
        if isinstance(spec, ModelSpec):
            return spec
        retriever = getattr(retriever, "inner", None)
        if retriever is None:
            return None
    return None


def _max_tokens(retriever: DescribedModel, spec: ModelSpec | None) -> float | None:
    """The token limit the run used; the model's own when the retriever records none."""
    if retriever.max_length:
        return float(retriever.max_length)
    return float(spec.max_tokens) if spec and spec.max_tokens else None


def _hub_page(name: str) -> str:
    return f"https://huggingface.co/{name}"


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
