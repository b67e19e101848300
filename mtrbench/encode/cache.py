"""Corpus embeddings on disk, keyed by everything that determines them, written in resumable shards.

Layout: ``<root>/<key>/manifest.json`` plus ``shard-00000.safetensors``, ``shard-00001.safetensors``,
... each holding one tensor ``embeddings`` for a fixed-size slice of the corpus (the last may be
shorter). ``key`` is the sha256 of the model (name, revision), document prompt, pooling pipeline,
normalization, max length, embedding dtype and a hash of the corpus content (ordered doc ids and
texts), so changing any of them - one passage included - selects a different entry.

Every file is written to a temporary name and renamed into place, so a killed run leaves whole
shards or none. A later run loads the shards that check out (readable, this entry's key and shard
number in the metadata, expected shape and dtype, finite values) and encodes only the rest; a shard
that fails the check is counted, reported, and encoded again. No pickle anywhere.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from mtrbench.errors import MtrbenchError

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
DEFAULT_SHARD_DOCS = 50_000
MANIFEST = "manifest.json"
TENSOR = "embeddings"

# (texts, chunk_sizes, on_chunk(i, embeddings)) -> embeddings
EncodeFn = Callable[[list[str], list[int], Callable[[int, torch.Tensor], None]], torch.Tensor]


def default_root() -> Path:
    base = os.environ.get("MTRBENCH_CACHE_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".cache" / "mtrbench") / "embeddings"


def corpus_fingerprint(ids: Sequence[str], texts: Sequence[str]) -> str:
    """sha256 of the ordered (id, text) pairs, each length-prefixed so no two corpora collide by concatenation."""
    digest = hashlib.sha256()
    for doc_id, text in zip(ids, texts, strict=True):
        for part in (doc_id, text):
            data = part.encode("utf-8")
            digest.update(len(data).to_bytes(8, "little"))
            digest.update(data)
    return digest.hexdigest()


@dataclass(frozen=True)
class CacheKey:
    model: str
    revision: str
    prompt: str
    pipeline: dict[str, Any]  # pooling / dense / normalize modules as configured
    normalize: bool
    max_length: int
    dtype: str
    corpus: str               # corpus_fingerprint
    n_docs: int

    def digest(self) -> str:
        payload = json.dumps({"format": FORMAT_VERSION, **asdict(self)}, sort_keys=True, ensure_ascii=True)
        return hashlib.sha256(payload.encode()).hexdigest()


@dataclass
class CacheReport:
    key: str
    shards: int = 0
    loaded: int = 0
    encoded: int = 0
    corrupt: int = 0
    messages: list[str] = field(default_factory=list)

    @property
    def hit(self) -> bool:
        return self.encoded == 0


@dataclass(frozen=True)
class Entry:
    key: str
    path: Path
    manifest: dict[str, Any]
    size_bytes: int

    @property
    def model(self) -> str:
        return self.manifest.get("fields", {}).get("model", "?")


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class EmbeddingCache:
    def __init__(self, root: str | Path | None = None, shard_docs: int = DEFAULT_SHARD_DOCS) -> None:
        self.root = Path(root).expanduser() if root else default_root()
        if shard_docs < 1:
            raise ValueError("shard_docs must be positive")
        self.shard_docs = shard_docs

    # -- encode with resume ---------------------------------------------------------------------

    def load_or_encode(self, key: CacheKey, texts: list[str], encode: EncodeFn,
                       device: str | torch.device = "cpu") -> tuple[torch.Tensor, CacheReport]:
        """All embeddings on ``device``, from disk where valid shards exist, else encoded and written shard by
        shard. Shards go to ``device`` as they are read and are checked there (cheap on a GPU), so a cached
        million-passage corpus is never concatenated on the host first."""
        if len(texts) != key.n_docs:
            raise ValueError(f"{len(texts)} texts for a key of {key.n_docs} documents")
        digest = key.digest()
        folder = self.root / digest
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MtrbenchError(f"cannot create the embedding cache folder {folder}: {exc.strerror} "
                                f"(use --cache-dir DIR or --no-cache)") from None
        bounds = [(s, min(s + self.shard_docs, key.n_docs)) for s in range(0, key.n_docs, self.shard_docs)]
        manifest = self._read_manifest(folder)
        if manifest is None or manifest.get("shard_docs") != self.shard_docs:
            if manifest is not None:  # a different shard size: its shards do not line up with ours
                for old in folder.glob("shard-*.safetensors"):
                    old.unlink()
            manifest = {"format": FORMAT_VERSION, "key": digest, "fields": asdict(key), "shard_docs": self.shard_docs,
                        "n_shards": len(bounds), "dim": None, "complete": False, "created": _now()}
            self._write_manifest(folder, manifest)
        report = CacheReport(digest, shards=len(bounds))
        shards: list[torch.Tensor | None] = [None] * len(bounds)
        dim = manifest.get("dim")
        for i, (start, end) in enumerate(bounds):
            path = folder / f"shard-{i:05d}.safetensors"
            if not path.exists():
                continue
            tensor, problem = self._load_shard(path, digest, i, end - start, dim, key.dtype, device)
            if problem:
                report.corrupt += 1
                report.messages.append(f"shard {i}: {problem}")
                log.warning("embedding cache %s: shard %d is unusable (%s); encoding it again", digest[:12], i, problem)
                continue
            shards[i] = tensor
            dim = tensor.shape[1]
        report.loaded = sum(t is not None for t in shards)
        missing = [i for i, t in enumerate(shards) if t is None]
        if missing:
            def write(j: int, embeddings: torch.Tensor) -> None:
                i = missing[j]
                cpu = embeddings.detach().to("cpu").contiguous()
                self._write_shard(folder / f"shard-{i:05d}.safetensors", cpu, digest, i, bounds[i])
                shards[i] = embeddings.detach().to(device)
                if manifest.get("dim") is None:
                    manifest["dim"] = int(cpu.shape[1])
                    self._write_manifest(folder, manifest)

            todo = [t for i in missing for t in texts[bounds[i][0]:bounds[i][1]]]
            encode(todo, [bounds[i][1] - bounds[i][0] for i in missing], write)
            report.encoded = len(missing)
        if not manifest.get("complete") or report.encoded or report.corrupt:
            manifest.update(complete=True, dim=int(shards[0].shape[1]) if shards else manifest.get("dim"),
                            updated=_now())
            self._write_manifest(folder, manifest)
        if not shards:
            return torch.empty(0, 0, device=device), report
        return torch.cat(shards), report  # type: ignore[arg-type]

    def _load_shard(self, path: Path, digest: str, index: int, rows: int, dim: int | None, dtype: str,
                    device: str | torch.device = "cpu") -> tuple[torch.Tensor | None, str | None]:
        from safetensors import SafetensorError, safe_open

        try:
            with safe_open(str(path), framework="pt") as handle:
                meta = handle.metadata() or {}
                if meta.get("key") != digest or meta.get("shard") != str(index):
                    return None, "metadata names another cache entry or shard"
                tensor = handle.get_tensor(TENSOR)
        except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
            return None, f"unreadable ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
        expected = _TORCH_DTYPES.get(dtype)
        if tensor.dim() != 2 or tensor.shape[0] != rows or (dim is not None and tensor.shape[1] != dim):
            return None, f"shape {tuple(tensor.shape)}, expected ({rows}, {dim or 'dim'})"
        if expected is not None and tensor.dtype != expected:
            return None, f"dtype {tensor.dtype}, expected {expected}"
        tensor = tensor.to(device)
        if not _all_finite(tensor):
            return None, "non-finite values"
        return tensor, None

    def _write_shard(self, path: Path, tensor: torch.Tensor, digest: str, index: int, bounds: tuple[int, int]) -> None:
        from safetensors.torch import save

        data = save({TENSOR: tensor}, metadata={"key": digest, "shard": str(index), "start": str(bounds[0]),
                                                "end": str(bounds[1]), "format": str(FORMAT_VERSION)})
        _atomic_write_bytes(path, data)

    @staticmethod
    def _read_manifest(folder: Path) -> dict[str, Any] | None:
        try:
            manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return manifest if isinstance(manifest, dict) and manifest.get("format") == FORMAT_VERSION else None

    @staticmethod
    def _write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
        _atomic_write_bytes(folder / MANIFEST, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())

    # -- listing and removal --------------------------------------------------------------------

    def entries(self) -> list[Entry]:
        if not self.root.is_dir():
            return []
        found = []
        for folder in sorted(p for p in self.root.iterdir() if p.is_dir()):
            manifest = self._read_manifest(folder)
            if manifest is None:
                continue
            size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
            found.append(Entry(folder.name, folder, manifest, size))
        return found

    def select(self, key: str | None = None, model: str | None = None, everything: bool = False) -> list[Entry]:
        entries = self.entries()
        if everything:
            return entries
        if model is not None:
            return [e for e in entries if e.model == model]
        if key:
            matches = [e for e in entries if e.key.startswith(key)]
            if len(matches) > 1:
                raise MtrbenchError(f"cache key prefix '{key}' matches {len(matches)} entries; give more characters")
            return matches
        return []

    def remove(self, entries: Sequence[Entry]) -> int:
        removed = 0
        for entry in entries:
            # only folders this cache created: directly under the root, holding a manifest
            if entry.path.parent.resolve() == self.root.resolve() and (entry.path / MANIFEST).is_file():
                shutil.rmtree(entry.path)
                removed += 1
        return removed


_TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def _all_finite(tensor: torch.Tensor) -> bool:
    """No NaN or infinity. ``aminmax`` propagates NaN and exposes ±inf in one reduction; on a CPU it is
    about 50x faster than ``isfinite(...).all()`` for bf16 (0.2 s instead of 9 s for 1M x 1024)."""
    if tensor.numel() == 0:
        return True
    low, high = torch.aminmax(tensor)
    return math.isfinite(float(low)) and math.isfinite(float(high))
