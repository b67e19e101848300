"""Corpus embeddings on disk, keyed by everything that determines them, written in resumable shards.

Layout: ``<root>/<key>/manifest.json``, ``shard-00000.safetensors``, ``shard-00001.safetensors``, ...
each shard holding one tensor ``embeddings`` for a contiguous range of the corpus, and ``.lock`` while
a run writes the entry. ``key`` is the sha256 of the model (name, revision), document prompt, pooling
pipeline, normalization, max length, embedding dtype and a hash of the corpus content (ordered doc ids
and texts), so changing any of them - one passage included - selects a different entry.

Shards are sized by work, not by a count: texts are encoded in blocks aligned to fixed corpus positions
(``ShardLimits.block``), and a shard is closed at the end of the first block after ``seconds`` of
encoding or ``bytes`` of embeddings, whichever comes first, so a killed run loses at most about one
shard's time. Each block is tokenized, length-sorted and batched on its own, so an embedding does not
depend on where an earlier run stopped: a resumed entry equals one encoded in a single run.

The manifest lists every shard's range and the sha256 of its tensor, and is rewritten (atomically)
after each shard it names, so a killed run leaves whole shards or none. A later run loads the shards
that check out (readable, this entry's key and range in the metadata, expected shape and dtype, finite
values, the recorded hash) and encodes only the gaps; a shard that fails a check is counted, reported,
and encoded again. Writers take the entry's lock (``.lock``, ``mtrbench.infra.locking``); reading a complete entry
takes none. No pickle anywhere.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import logging
import math
import os
import shutil
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from mtrbench.infra.atomic import atomic_write_bytes
from mtrbench.infra.errors import MtrbenchError, first_line
from mtrbench.infra.locking import LockHeld, LockHolder, held_lock, is_held, read_holder
from mtrbench.infra.numeric import json_text

log = logging.getLogger(__name__)

KEY_VERSION = 1  # what the embeddings of a key mean; part of every key
MANIFEST_FORMAT = 2  # how an entry is laid out on disk (1: fixed 50,000-text shards, no hashes)
MANIFEST = "manifest.json"
LOCK_FILE = ".lock"  # present while a run writes the entry (mtrbench.infra.locking)
TENSOR = "embeddings"

DEFAULT_SHARD_SECONDS = 60.0
DEFAULT_SHARD_BYTES = 256 * 2**20
CPU_BLOCK_TEXTS = 256  # ~10 s of MiniLM on 2 CPU cores; small enough for a 60 s shard, sorted well enough
CUDA_BLOCK_TEXTS = 8_192  # per device; one tokenizer window, a fraction of a second on a GPU
DEFAULT_LOCK_WAIT_S = 600.0

# (texts, chunk_sizes, on_chunk(i, embeddings)) -> embeddings
EncodeFn = Callable[[list[str], list[int], Callable[[int, torch.Tensor], None]], Any]

_clock = time.monotonic  # what shard durations are measured with (tests substitute a fake clock)


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


def tensor_sha256(tensor: torch.Tensor) -> str:
    """sha256 of a tensor's dtype, shape and raw (row-major) bytes."""
    host = tensor.detach().to("cpu").contiguous()
    digest = hashlib.sha256(f"{host.dtype}:{tuple(host.shape)}:".encode())
    if host.numel():
        digest.update(host.view(torch.uint8).numpy().data)
    return digest.hexdigest()


def _env_number(name: str, default: float | None, minimum: float) -> float | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not value >= minimum or math.isinf(value):
        raise MtrbenchError(f"{name}={raw!r}: expected a number >= {minimum:g}")
    return value


@dataclass(frozen=True)
class ShardLimits:
    """When a shard is closed: at the end of the first block after ``seconds`` of encoding, ``bytes`` of
    embeddings or ``texts`` texts, whichever comes first (and always at the end of a gap)."""

    seconds: float = DEFAULT_SHARD_SECONDS
    bytes: int = DEFAULT_SHARD_BYTES
    texts: int | None = None  # no count limit by default; tests and small tools use one
    block: int | None = None  # texts encoded together; None: CPU_BLOCK_TEXTS, or CUDA_BLOCK_TEXTS per GPU

    def __post_init__(self) -> None:
        if (
            not self.seconds >= 0
            or self.bytes < 1
            or (self.texts is not None and self.texts < 1)
            or (self.block is not None and self.block < 1)
        ):
            raise ValueError(f"invalid shard limits {self}")

    @classmethod
    def from_env(cls) -> ShardLimits:
        """Defaults, overridden by MTRBENCH_CACHE_SHARD_SECONDS, MTRBENCH_CACHE_SHARD_MB and
        MTRBENCH_CACHE_BLOCK_TEXTS."""
        megabytes = _env_number("MTRBENCH_CACHE_SHARD_MB", None, 1 / 1024)
        block = _env_number("MTRBENCH_CACHE_BLOCK_TEXTS", None, 1)
        return cls(
            seconds=_env_number("MTRBENCH_CACHE_SHARD_SECONDS", DEFAULT_SHARD_SECONDS, 0),
            bytes=int(megabytes * 2**20) if megabytes else DEFAULT_SHARD_BYTES,
            block=int(block) if block else None,
        )

    def block_texts(self, device: str | torch.device, n_devices: int = 1) -> int:
        block = self.block or (
            CUDA_BLOCK_TEXTS * max(1, n_devices) if torch.device(device).type == "cuda" else CPU_BLOCK_TEXTS
        )
        return min(block, self.texts) if self.texts else block


@dataclass(frozen=True)
class CacheKey:
    model: str
    revision: str
    prompt: str
    pipeline: dict[str, Any]  # pooling / dense / normalize modules as configured
    normalize: bool
    max_length: int
    dtype: str
    corpus: str  # corpus_fingerprint
    n_docs: int

    def digest(self) -> str:
        payload = json.dumps({"format": KEY_VERSION, **asdict(self)}, sort_keys=True, ensure_ascii=True)
        return hashlib.sha256(payload.encode()).hexdigest()


@dataclass
class CacheReport:
    """What one run did with its cache entry (lands in the result JSON as ``embedding_cache``)."""

    key: str
    shards: int = 0  # shards of the entry after this run
    loaded: int = 0  # shards read from disk
    encoded: int = 0  # shards this run encoded and wrote
    corrupt: int = 0  # shards that failed a check (and were encoded again)
    texts_loaded: int = 0
    texts_encoded: int = 0
    lock_wait_s: float = 0.0  # time spent waiting for another run writing the entry
    messages: list[str] = field(default_factory=list)

    @property
    def hit(self) -> bool:
        return self.encoded == 0


@dataclass(frozen=True)
class ShardRecord:
    index: int  # file number
    start: int  # corpus rows [start, end)
    end: int
    sha256: str  # tensor_sha256 of its embeddings
    seconds: float  # encoding time it took
    written: str

    @property
    def file(self) -> str:
        return shard_file(self.index)


def shard_file(index: int) -> str:
    return f"shard-{index:05d}.safetensors"


@dataclass
class Manifest:
    key: str
    fields: dict[str, Any]
    created: str
    updated: str = ""
    dim: int | None = None
    complete: bool = False
    shards: list[ShardRecord] = field(default_factory=list)  # sorted by start, disjoint
    next_index: int = 0
    limits: dict[str, Any] = field(default_factory=dict)  # of the last run that wrote shards

    @property
    def n_docs(self) -> int:
        return int(self.fields["n_docs"])

    def gaps(self) -> list[tuple[int, int]]:
        """Ranges of the corpus no shard covers, in order."""
        gaps, position = [], 0
        for record in self.shards:
            if record.start > position:
                gaps.append((position, record.start))
            position = record.end
        if position < self.n_docs:
            gaps.append((position, self.n_docs))
        return gaps

    def add(self, record: ShardRecord) -> None:
        bisect.insort(self.shards, record, key=lambda r: r.start)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": MANIFEST_FORMAT,
            "key": self.key,
            "fields": self.fields,
            "created": self.created,
            "updated": self.updated,
            "dim": self.dim,
            "complete": self.complete,
            "next_index": self.next_index,
            "limits": self.limits,
            "shards": [{"file": r.file, **asdict(r)} for r in self.shards],
        }

    @classmethod
    def from_json(cls, data: Any, digest: str) -> Manifest | None:
        """None for anything but a consistent manifest of this format and key."""
        if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT or data.get("key") != digest:
            return None
        try:
            shards = [
                ShardRecord(
                    index=int(s["index"]),
                    start=int(s["start"]),
                    end=int(s["end"]),
                    sha256=str(s["sha256"]),
                    seconds=float(s["seconds"]),
                    written=str(s["written"]),
                )
                for s in data["shards"]
            ]
            manifest = cls(
                key=digest,
                fields=dict(data["fields"]),
                created=str(data["created"]),
                updated=str(data.get("updated") or ""),
                dim=data.get("dim"),
                complete=bool(data["complete"]),
                shards=shards,
                next_index=int(data["next_index"]),
                limits=dict(data.get("limits") or {}),
            )
            n_docs = manifest.n_docs
        except (KeyError, TypeError, ValueError):
            return None
        position = 0
        for record in shards:
            if not position <= record.start < record.end <= n_docs or record.index >= manifest.next_index:
                return None
            position = record.end
        if len({r.index for r in shards}) != len(shards) or (manifest.complete and manifest.gaps()):
            return None
        if manifest.dim is not None and not (isinstance(manifest.dim, int) and manifest.dim > 0):
            return None
        return manifest


@dataclass(frozen=True)
class Entry:
    key: str
    path: Path
    manifest: dict[str, Any]
    size_bytes: int

    @property
    def model(self) -> str:
        return self.manifest.get("fields", {}).get("model", "?")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class _Pending:
    """Blocks encoded since the last shard was closed."""

    parts: list[tuple[int, torch.Tensor]] = field(default_factory=list)  # (first row, embeddings) per block
    start: int = -1
    end: int = -1
    nbytes: int = 0
    since: float = 0.0  # _clock() when its encoding began


class EmbeddingCache:
    def __init__(
        self,
        root: str | Path | None = None,
        limits: ShardLimits | None = None,
        lock_wait_s: float | None = None,
        shard_docs: int | None = None,
    ) -> None:
        """``limits`` and ``lock_wait_s`` default to the environment (see ``ShardLimits.from_env`` and
        MTRBENCH_CACHE_LOCK_WAIT); ``shard_docs`` caps the texts per shard (and per block)."""
        self.root = Path(root).expanduser() if root else default_root()
        if shard_docs is not None and shard_docs < 1:
            raise ValueError("shard_docs must be positive")
        limits = limits or ShardLimits.from_env()
        self.limits = ShardLimits(limits.seconds, limits.bytes, shard_docs, limits.block) if shard_docs else limits
        self.lock_wait_s = (
            lock_wait_s if lock_wait_s is not None else _env_number("MTRBENCH_CACHE_LOCK_WAIT", DEFAULT_LOCK_WAIT_S, 0)
        )

    # -- encode with resume ---------------------------------------------------------------------

    _keep = True  # whether this call's checked and encoded shards are held for the result (load_or_encode)

    def entry_folder(self, key: CacheKey) -> Path:
        return self.root / key.digest()

    def load_or_encode(
        self,
        key: CacheKey,
        texts: list[str],
        encode: EncodeFn,
        device: str | torch.device = "cpu",
        n_devices: int = 1,
        keep: bool = True,
        block_device: str | torch.device | None = None,
    ) -> tuple[torch.Tensor, CacheReport]:
        """All embeddings on ``device``, from disk where valid shards exist, else encoded and written shard by
        shard. Shards go to ``device`` as they are read and are checked there (cheap on a GPU), so a cached
        million-passage corpus is never concatenated on the host first.

        ``keep=False``: make the entry complete on disk but hold no embeddings (each shard is checked and
        dropped; an empty tensor is returned) - for searchers that read the shards themselves
        (``entry_folder``, ``mtrbench.search.streaming``). ``block_device``: the device type whose block size
        applies (default ``device``; a Ray driver's encoders may live elsewhere)."""
        if len(texts) != key.n_docs:
            raise ValueError(f"{len(texts)} texts for a key of {key.n_docs} documents")
        digest = key.digest()
        folder = self.root / digest
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MtrbenchError(
                f"cannot create the embedding cache folder {folder}: {exc.strerror} (use --cache-dir DIR or --no-cache)"
            ) from None
        report = CacheReport(digest)
        checked: dict[tuple[int, str], torch.Tensor | str] = {}
        self._keep = keep
        manifest = self._read_manifest(folder, digest)
        if manifest is not None and manifest.complete:  # a finished entry is read without the lock
            pieces, problems = self._verify(folder, manifest, key.dtype, device, checked)
            if not problems:
                return self._assemble(pieces, manifest, report, device)
        path, label, wait_s = folder / LOCK_FILE, digest[:12], self.lock_wait_s
        with ExitStack() as stack:
            began = time.monotonic()
            try:
                stack.enter_context(
                    held_lock(
                        path,
                        purpose=f"embedding cache entry {label}",
                        wait_s=wait_s,
                        on_wait=lambda holder: log.warning(
                            "embedding cache %s is being written by %s; waiting up to "
                            "%.0f s for it (MTRBENCH_CACHE_LOCK_WAIT)",
                            label,
                            _who(holder),
                            wait_s,
                        ),
                        on_stale=lambda holder: log.warning(
                            "embedding cache %s: taking over the lock of %s, which is no longer running",
                            label,
                            holder.describe(),
                        ),
                    )
                )
            except LockHeld as held:
                waited = time.monotonic() - began
                raise MtrbenchError(
                    f"embedding cache entry {label} is being written by {_who(held.holder)}"
                    + (f"; waited {waited:.0f} s" if wait_s > 0 else "")
                    + f". Let that run finish (set MTRBENCH_CACHE_LOCK_WAIT=SECONDS to wait longer), use another "
                    f"--cache-dir or --no-cache, or delete {path} if that process is gone"
                ) from None
            except MtrbenchError as err:  # the lock file cannot be created
                raise MtrbenchError(f"{err} (use --cache-dir DIR or --no-cache)") from None
            report.lock_wait_s = round(time.monotonic() - began, 3)
            return self._fill(folder, key, texts, encode, device, n_devices, report, checked, block_device)

    def _fill(
        self,
        folder: Path,
        key: CacheKey,
        texts: list[str],
        encode: EncodeFn,
        device: str | torch.device,
        n_devices: int,
        report: CacheReport,
        checked: dict,
        block_device: str | torch.device | None = None,
    ) -> tuple[torch.Tensor, CacheReport]:
        """Under the lock: load what checks out, encode the gaps, leave a complete manifest."""
        digest = report.key
        manifest = self._read_manifest(folder, digest)  # re-read: another run may have written it meanwhile
        if manifest is None:
            manifest = Manifest(key=digest, fields=asdict(key), created=_now())
        pieces, problems = self._verify(folder, manifest, key.dtype, device, checked)
        for record, problem in problems:
            report.corrupt += 1
            report.messages.append(f"shard {record.index}: {problem}")
            log.debug("embedding cache %s: shard %d is unusable (%s)", digest[:12], record.index, problem)
        bad = {record.index for record, _ in problems}
        manifest.shards = [r for r in manifest.shards if r.index not in bad]
        manifest.complete = manifest.complete and not bad
        self._write_manifest(folder, manifest)
        self._tidy(folder, manifest)
        gaps = manifest.gaps()
        if gaps:
            block = self.limits.block_texts(block_device or device, n_devices)
            manifest.limits = {
                "seconds": self.limits.seconds,
                "bytes": self.limits.bytes,
                "texts": self.limits.texts,
                "block": block,
            }
            self._encode_gaps(folder, manifest, gaps, block, texts, encode, device, report, pieces)
        if not manifest.complete:
            manifest.complete = True
            manifest.updated = _now()
            self._write_manifest(folder, manifest)
        return self._assemble(pieces, manifest, report, device)

    def _encode_gaps(
        self,
        folder: Path,
        manifest: Manifest,
        gaps: list[tuple[int, int]],
        block: int,
        texts: list[str],
        encode: EncodeFn,
        device: str | torch.device,
        report: CacheReport,
        pieces: dict[int, torch.Tensor],
    ) -> None:
        # Blocks end at multiples of ``block`` (and at gap ends), wherever encoding started, so every
        # block is batched the same way in a resumed run as in an uninterrupted one.
        blocks = []
        for start, end in gaps:
            position = start
            while position < end:
                stop = min(end, (position // block + 1) * block)
                blocks.append((position, stop))
                position = stop
        gap_ends = {end for _, end in gaps}
        pending = _Pending(since=_clock())

        def close() -> None:
            tensors = [part for _, part in pending.parts]
            host = (tensors[0] if len(tensors) == 1 else torch.cat(tensors)).detach().to("cpu").contiguous()
            index = manifest.next_index
            manifest.next_index += 1
            self._write_shard(folder / shard_file(index), host, manifest.key, index, (pending.start, pending.end))
            manifest.add(
                ShardRecord(
                    index=index,
                    start=pending.start,
                    end=pending.end,
                    sha256=tensor_sha256(host),
                    seconds=round(_clock() - pending.since, 3),
                    written=_now(),
                )
            )
            manifest.dim = manifest.dim or int(host.shape[1])
            manifest.updated = _now()
            self._write_manifest(folder, manifest)  # after its shard: a listed shard is always on disk
            for start, part in pending.parts:  # the engine's own rows, not a concatenated copy
                pieces[start] = part.detach().to(device) if self._keep else torch.empty(0)
            report.encoded += 1
            report.texts_encoded += pending.end - pending.start
            pending.parts, pending.nbytes, pending.since = [], 0, _clock()

        def on_block(i: int, embeddings: torch.Tensor) -> None:
            start, end = blocks[i]
            if not pending.parts:
                pending.start = start
            pending.parts.append((start, embeddings))
            pending.end = end
            pending.nbytes += embeddings.numel() * embeddings.element_size()
            limits = self.limits
            if (
                end in gap_ends
                or _clock() - pending.since >= limits.seconds
                or pending.nbytes >= limits.bytes
                or (limits.texts and end - pending.start >= limits.texts)
            ):
                close()

        encode([t for start, end in gaps for t in texts[start:end]], [end - start for start, end in blocks], on_block)

    def _verify(
        self,
        folder: Path,
        manifest: Manifest,
        dtype: str,
        device: str | torch.device,
        checked: dict[tuple[int, str], torch.Tensor | str],
    ) -> tuple[dict[int, torch.Tensor], list[tuple[ShardRecord, str]]]:
        """(first row -> embeddings of the shards that check out, (shard, problem) of those that do not)."""
        pieces, problems = {}, []
        for record in manifest.shards:
            memo = (record.index, record.sha256)
            if memo not in checked:
                tensor, problem = self._load_shard(
                    folder / record.file, manifest.key, record, manifest.dim, dtype, device
                )
                checked[memo] = (tensor if self._keep else torch.empty(0)) if tensor is not None else problem
            result = checked[memo]
            if isinstance(result, str):
                problems.append((record, result))
            else:
                pieces[record.start] = result
        return pieces, problems

    @staticmethod
    def _assemble(
        pieces: dict[int, torch.Tensor], manifest: Manifest, report: CacheReport, device: str | torch.device
    ) -> tuple[torch.Tensor, CacheReport]:
        report.shards = len(manifest.shards)
        report.loaded = report.shards - report.encoded
        report.texts_loaded = manifest.n_docs - report.texts_encoded
        if not pieces or not all(piece.dim() == 2 for piece in pieces.values()):  # none, or not kept
            return torch.empty(0, 0, device=device), report
        return torch.cat([pieces[start] for start in sorted(pieces)]), report

    def _load_shard(
        self,
        path: Path,
        digest: str,
        record: ShardRecord,
        dim: int | None,
        dtype: str,
        device: str | torch.device = "cpu",
    ) -> tuple[torch.Tensor | None, str | None]:
        from safetensors import SafetensorError, safe_open

        try:
            with safe_open(str(path), framework="pt") as handle:
                meta = handle.metadata() or {}
                if (meta.get("key"), meta.get("shard"), meta.get("start"), meta.get("end")) != (
                    digest,
                    str(record.index),
                    str(record.start),
                    str(record.end),
                ):
                    return None, "metadata names another cache entry or shard"
                tensor = handle.get_tensor(TENSOR)
        except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
            return None, f"unreadable ({first_line(exc)})"
        expected = _TORCH_DTYPES.get(dtype)
        rows = record.end - record.start
        if tensor.dim() != 2 or tensor.shape[0] != rows or (dim is not None and tensor.shape[1] != dim):
            return None, f"shape {tuple(tensor.shape)}, expected ({rows}, {dim or 'dim'})"
        if expected is not None and tensor.dtype != expected:
            return None, f"dtype {tensor.dtype}, expected {expected}"
        sha = tensor_sha256(tensor)  # of the host copy, while the device checks finiteness
        tensor = tensor.to(device)
        if not _all_finite(tensor):
            return None, "non-finite values"
        if sha != record.sha256:
            return None, "content differs from the sha256 recorded when it was written"
        return tensor, None

    def _write_shard(self, path: Path, tensor: torch.Tensor, digest: str, index: int, bounds: tuple[int, int]) -> None:
        from safetensors.torch import save

        data = save(
            {TENSOR: tensor},
            metadata={
                "key": digest,
                "shard": str(index),
                "start": str(bounds[0]),
                "end": str(bounds[1]),
                "format": str(MANIFEST_FORMAT),
            },
        )
        atomic_write_bytes(path, data, fsync=True)

    @staticmethod
    def _tidy(folder: Path, manifest: Manifest) -> None:
        """Under the lock: remove shard files the manifest does not list (an older format's, a corrupt one's,
        one written just before a kill) and temporary files of killed writers."""
        listed = {record.file for record in manifest.shards}
        for path in [
            *folder.glob("shard-*.safetensors"),
            *folder.glob(".shard-*.tmp"),
            *folder.glob(f".{MANIFEST}.*.tmp"),
        ]:
            if path.name not in listed:
                path.unlink(missing_ok=True)

    @staticmethod
    def _read_raw_manifest(folder: Path) -> dict[str, Any] | None:
        try:
            data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("format") in (1, MANIFEST_FORMAT) else None

    @classmethod
    def _read_manifest(cls, folder: Path, digest: str) -> Manifest | None:
        return Manifest.from_json(cls._read_raw_manifest(folder), digest)

    @staticmethod
    def _write_manifest(folder: Path, manifest: Manifest) -> None:
        data = json_text(manifest.to_json(), path=folder / MANIFEST, indent=1, sort_keys=True) + "\n"
        atomic_write_bytes(folder / MANIFEST, data.encode(), fsync=True)

    # -- listing and removal --------------------------------------------------------------------

    def entries(self) -> list[Entry]:
        if not self.root.is_dir():
            return []
        found = []
        for folder in sorted(p for p in self.root.iterdir() if p.is_dir()):
            manifest = self._read_raw_manifest(folder)
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
            if entry.path.parent.resolve() != self.root.resolve() or not (entry.path / MANIFEST).is_file():
                continue
            if is_held(entry.path / LOCK_FILE):
                log.warning(
                    "not removing cache entry %s: it is being written by %s",
                    entry.key[:12],
                    _who(read_holder(entry.path / LOCK_FILE)),
                )
                continue
            shutil.rmtree(entry.path)
            removed += 1
        return removed


def _who(holder: LockHolder | None) -> str:
    return f"{holder.name} (since {holder.started})" if holder else "another run (its lock file cannot be read)"


_TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def _all_finite(tensor: torch.Tensor) -> bool:
    """No NaN or infinity. ``aminmax`` propagates NaN and exposes ±inf in one reduction; on a CPU it is
    about 50x faster than ``isfinite(...).all()`` for bf16 (0.2 s instead of 9 s for 1M x 1024)."""
    if tensor.numel() == 0:
        return True
    low, high = torch.aminmax(tensor)
    return math.isfinite(float(low)) and math.isfinite(float(high))
