"""What kind of retrieval model a checkpoint is, told from the small files saved beside its weights, before
anything loads (docs/model-kinds.md).

sentence-transformers records its model class in ``config_sentence_transformers.json`` (``model_type``) and its
modules in ``modules.json``; PyLate and Stanford ColBERT checkpoints, which sentence-transformers 6 loads as
``MultiVectorEncoder``, have their own markers. A checkpoint that says none of this (a bare transformers folder)
could be read several ways: it gets no guess, the user names its kind with ``--model-kind``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from mtrbench.infra.errors import UserInputError
from mtrbench.models.spec import CHECKPOINT_KINDS, CROSS_ENCODER, DENSE, DUAL, MULTI_VECTOR, SPARSE

ST_CONFIG = "config_sentence_transformers.json"
MODULES = "modules.json"
CONFIG = "config.json"
STANFORD_METADATA = "artifact.metadata"  # Stanford ColBERT's settings file
KIND_FILES = (ST_CONFIG, MODULES, CONFIG, STANFORD_METADATA)

# config_sentence_transformers.json "model_type" -> kind ("ColBERT": PyLate 3's spelling of a MultiVectorEncoder)
ST_MODEL_TYPES = {
    "SentenceTransformer": DENSE,
    "SparseEncoder": SPARSE,
    "MultiVectorEncoder": MULTI_VECTOR,
    "ColBERT": MULTI_VECTOR,
    "CrossEncoder": CROSS_ENCODER,
}
# Top-level keys only PyLate's config_sentence_transformers.json has (its [Q]/[D] markers and query length).
PYLATE_KEYS = ("query_prefix", "document_prefix", "query_length")
# Parts of a modules.json "type" that only one kind's modules have.
SPARSE_MODULES = ("sparse_encoder", "MLMTransformer", "SpladePooling", "SparseStaticEmbedding", "SparseAutoEncoder")
MULTI_VECTOR_MODULES = ("multi_vector_encoder", "MultiVectorMask", "TokenPooling", "pylate.")
# One vector per text: sentence-transformers' pooling (mean, CLS, last token...) or static (model2vec) embeddings.
DENSE_MODULES = ("Pooling", "StaticEmbedding")

_ABSENT = object()  # a file the checkpoint does not have
_UNKNOWN = object()  # a file that could not be read (a Hub model neither cached nor reachable)


@dataclass(frozen=True)
class KindFiles:
    """The files a kind is told from; None: the checkpoint has no such file."""

    st_config: dict[str, Any] | None = None
    modules: list[Any] | None = None
    config: dict[str, Any] | None = None
    stanford_metadata: bool = False


def kind_from_files(files: KindFiles) -> str | None:
    """The kind the files say, or None when they cannot tell (files of an unexpected shape tell nothing)."""
    st_config = files.st_config if isinstance(files.st_config, dict) else {}
    st_type = st_config.get("model_type")
    if isinstance(st_type, str) and st_type in ST_MODEL_TYPES:
        return ST_MODEL_TYPES[st_type]
    if any(key in st_config for key in PYLATE_KEYS):
        return MULTI_VECTOR
    modules = files.modules if isinstance(files.modules, list) else []
    types = [str(m.get("type", "")) for m in modules if isinstance(m, dict)]
    if any(part in t for t in types for part in SPARSE_MODULES):
        return SPARSE
    if any(part in t for t in types for part in MULTI_VECTOR_MODULES):
        return MULTI_VECTOR
    config = files.config if isinstance(files.config, dict) else {}
    listed = config.get("architectures")
    architectures = [str(a) for a in listed] if isinstance(listed, list) else []
    if files.stanford_metadata or "HF_ColBERT" in architectures:
        return MULTI_VECTOR
    if any(t.rsplit(".", 1)[-1] in DENSE_MODULES for t in types):
        return DENSE
    if files.modules is None and any(a.endswith("ForSequenceClassification") for a in architectures):
        return CROSS_ENCODER  # a cross-encoder saved before sentence-transformers wrote modules.json for them
    return None


def checkpoint_kind(location: str, revision: str | None = None, local_only: bool = False) -> str | None:
    """The kind of the checkpoint at ``location`` (a local folder, a Hub id or ``package:NAME``), or None when its
    files cannot tell. Hub files come from the local cache first, then the Hub; a Hub model that is neither cached
    nor reachable fails with one actionable line. Read once per location."""
    if location.startswith("package:"):
        return DENSE  # the packaged models are sentence-transformers embedders (models/loading.PACKAGED_MODELS)
    folder = Path(location).expanduser()
    if folder.is_dir():
        return _local_kind(str(folder.resolve()), _signature(folder))
    if folder.exists():
        raise UserInputError(f"model '{location}' is a file: a model is a checkpoint folder or a Hugging Face id")
    return _hub_kind(location, revision, local_only)


def _signature(folder: Path) -> tuple[tuple[str, int], ...]:
    """The kind files' modification times: a folder rewritten in place is read again."""
    stamps = []
    for name in KIND_FILES:
        try:
            stamps.append((name, (folder / name).stat().st_mtime_ns))
        except OSError:
            stamps.append((name, 0))
    return tuple(stamps)


@cache
def _local_kind(folder: str, signature: tuple[tuple[str, int], ...]) -> str | None:
    root = Path(folder)

    def read(name: str) -> Any:
        path = root / name
        return _json(path, name, folder) if path.is_file() else None

    return kind_from_files(
        KindFiles(read(ST_CONFIG), read(MODULES), read(CONFIG), (root / STANFORD_METADATA).is_file())
    )


def _json(path: Path, name: str, where: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UserInputError(f"model {where}: cannot read {name}: {exc}") from None


@cache
def _hub_kind(repo: str, revision: str | None, local_only: bool) -> str | None:
    paths = {name: _hub_file(repo, name, revision, local_only) for name in KIND_FILES}
    if all(path is _UNKNOWN for path in paths.values()):
        from mtrbench.data.hub import hub_error  # deferred: the data layer is loaded only for Hub models

        raise hub_error(repo, revision, kind="model", what="model", local_option="`--model DIR`")

    def read(name: str) -> Any:
        path = paths[name]
        return _json(Path(path), name, repo) if isinstance(path, str) else None

    return kind_from_files(
        KindFiles(read(ST_CONFIG), read(MODULES), read(CONFIG), isinstance(paths[STANFORD_METADATA], str))
    )


def _hub_file(repo: str, name: str, revision: str | None, local_only: bool) -> str | object:
    """The cached path of a Hub model's file, ``_ABSENT`` when the repository has none, ``_UNKNOWN`` when neither
    the cache nor the Hub can say. Files not cached while others of the repository are count as absent."""
    from huggingface_hub import hf_hub_download, try_to_load_from_cache
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError, RepositoryNotFoundError

    from mtrbench.data.hub import hub_reachable  # deferred: the data layer is loaded only for Hub models

    cached = try_to_load_from_cache(repo, name, revision=revision)
    if isinstance(cached, str):
        return cached
    if cached is not None:  # the cache remembers that the repository has no such file
        return _ABSENT
    if local_only or not hub_reachable():
        return _UNKNOWN
    try:
        return hf_hub_download(repo, name, revision=revision)
    except EntryNotFoundError:
        return _ABSENT
    except RepositoryNotFoundError:
        raise UserInputError(
            f"model '{repo}': no such model on the Hugging Face Hub (or it is private: log in with `hf auth login`)"
        ) from None
    except (HfHubHTTPError, OSError):
        return _UNKNOWN


def settled_kind(model: str, detected: str | None, requested: str | None) -> str:
    """The kind a checkpoint runs as: what its files say, else ``requested`` (``--model-kind``). A requested kind
    that contradicts the files, or no kind from either, is one error line."""
    if requested is not None and requested not in CHECKPOINT_KINDS:
        raise UserInputError(f"--model-kind {requested}: choose one of {', '.join(CHECKPOINT_KINDS)}")
    if detected is not None:
        if requested is not None and requested != detected:
            raise UserInputError(
                f"--model-kind {requested} contradicts model '{model}', which is a {detected} model; drop "
                f"--model-kind (it names the kind of a checkpoint whose files cannot tell)"
            )
        return detected
    if requested is None:
        raise UserInputError(
            f"cannot tell what kind of model '{model}' is: it has no sentence-transformers model type or modules "
            f"({ST_CONFIG}, {MODULES}); name it with --model-kind {{{','.join(CHECKPOINT_KINDS)}}}"
        )
    if requested == DUAL:
        raise UserInputError(
            f"--model-kind dual: a dual encoder has two towers; name them with --query-model and --doc-model "
            f"instead of --model '{model}'"
        )
    return requested
