"""Per-passage token vectors on disk, fp16, content-hashed like the embedding cache (encode/cache.py).

Layout: ``<embedding cache root>/multi-vector/<key>/`` holding ``tokens.npy`` (one flat ``(tokens, dim)``
fp16 matrix, every passage's token vectors one after the other in corpus order), ``offsets.npy`` (int64,
``n_docs + 1``: passage i owns rows ``offsets[i]:offsets[i+1]``) and ``token_store.json`` (the key's fields,
shapes and the sha256 of both files), written last. The dense cache lists folders holding a
``manifest.json`` only, so it never takes these for its own. ``key`` is the sha256 of the model (name,
revision), the document marker, what the checkpoint sets (lengths, expansion, skiplist, modules), the token
dtype and the corpus fingerprint: changing any of them, one passage included, selects another entry.

Every file is written whole (``mtrbench.infra.atomic``) and read with ``allow_pickle=False``, memory-mapped,
so search reads passages from the page cache instead of holding the matrix. An entry that fails a check
(missing or unreadable file, another key, shapes that disagree, a hash that differs) is encoded again,
with a warning.

Token vectors are stored as fp16 (half the bytes of fp32; scores move by about 1e-3 relative). MaxSim is
computed in fp32 over the fp16-rounded document vectors whether or not the store is used, so ``--no-cache``
gives the same scores; results record ``token_dtype: fp16``."""

from __future__ import annotations

import hashlib
import io
import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mtrbench.encode.cache import default_root
from mtrbench.infra.atomic import atomic_write_bytes

log = logging.getLogger(__name__)

STORE_VERSION = 1
TOKEN_DTYPE = "fp16"
TOKENS, OFFSETS, MANIFEST = "tokens.npy", "offsets.npy", "token_store.json"
SUBFOLDER = "multi-vector"


@dataclass(frozen=True)
class TokenStoreKey:
    model: str
    revision: str
    prompt: str  # the document marker
    settings: dict[str, Any]  # what the checkpoint sets (encode.multivector.CheckpointSettings.as_dict)
    corpus: str  # encode.cache.corpus_fingerprint
    n_docs: int
    token_dtype: str = TOKEN_DTYPE

    def digest(self) -> str:
        payload = json.dumps({"format": STORE_VERSION, **asdict(self)}, sort_keys=True, ensure_ascii=True)
        return hashlib.sha256(payload.encode()).hexdigest()


@dataclass(frozen=True)
class TokenMatrix:
    """Every passage's token vectors: ``vectors`` (tokens, dim) fp16, ``offsets`` (n_docs + 1) int64."""

    vectors: np.ndarray
    offsets: np.ndarray

    @property
    def n_docs(self) -> int:
        return len(self.offsets) - 1

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    @property
    def n_tokens(self) -> int:
        return int(self.offsets[-1])

    def bytes_per_passage(self) -> float:
        """Stored bytes per passage: its token vectors plus its offset (npy headers left out)."""
        return (self.vectors.nbytes + self.offsets.nbytes) / max(self.n_docs, 1)

    @classmethod
    def from_tensors(cls, per_doc: list[torch.Tensor], dim: int | None = None) -> TokenMatrix:
        lengths = np.array([len(t) for t in per_doc], dtype=np.int64)
        offsets = np.zeros(len(per_doc) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        width = dim if dim is not None else (int(per_doc[0].shape[1]) if per_doc else 0)
        vectors = np.empty((int(offsets[-1]), width), dtype=np.float16)
        for i, tensor in enumerate(per_doc):
            vectors[offsets[i] : offsets[i + 1]] = tensor.detach().to("cpu", torch.float16).numpy()
        return cls(vectors, offsets)


@dataclass
class TokenStoreReport:
    """What one run did with its token store entry (lands in the result JSON as ``embedding_cache``)."""

    key: str
    store: str = "multi-vector tokens"
    token_dtype: str = TOKEN_DTYPE
    loaded: bool = False
    texts_encoded: int = 0
    corrupt: int = 0
    n_tokens: int = 0
    bytes_per_passage: float = 0.0
    messages: list[str] = field(default_factory=list)

    @property
    def hit(self) -> bool:
        return self.loaded


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 24), b""):
            digest.update(block)
    return digest.hexdigest()


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


class TokenStore:
    def __init__(self, cache_dir: str | Path | None = None) -> None:
        self.root = (Path(cache_dir).expanduser() if cache_dir else default_root()) / SUBFOLDER

    def entry_folder(self, key: TokenStoreKey) -> Path:
        return self.root / key.digest()

    def load_or_encode(
        self, key: TokenStoreKey, texts: list[str], encode: Callable[[list[str]], list[torch.Tensor]]
    ) -> tuple[TokenMatrix, TokenStoreReport]:
        """The corpus's token vectors, memory-mapped from the entry when it checks out, else encoded and
        written (then mapped from the written files)."""
        if len(texts) != key.n_docs:
            raise ValueError(f"{len(texts)} texts for a key of {key.n_docs} documents")
        folder = self.entry_folder(key)
        report = TokenStoreReport(key.digest())
        problem = None
        if (folder / MANIFEST).exists():
            matrix, problem = self._read(folder, key)
            if matrix is not None:
                report.loaded = True
                return matrix, self._sized(report, matrix)
            report.corrupt = 1
            report.messages.append(problem or "unreadable")
            log.warning("warning: token store %s is corrupt (%s); encoding the corpus again", folder, problem)
        matrix = TokenMatrix.from_tensors(encode(texts))
        report.texts_encoded = len(texts)
        self._write(folder, key, matrix)
        mapped, problem = self._read(folder, key)
        return (mapped if mapped is not None else matrix), self._sized(report, matrix)

    @staticmethod
    def _sized(report: TokenStoreReport, matrix: TokenMatrix) -> TokenStoreReport:
        report.n_tokens = matrix.n_tokens
        report.bytes_per_passage = matrix.bytes_per_passage()
        return report

    @staticmethod
    def _write(folder: Path, key: TokenStoreKey, matrix: TokenMatrix) -> None:
        tokens, offsets = _npy_bytes(matrix.vectors), _npy_bytes(matrix.offsets)
        atomic_write_bytes(folder / TOKENS, tokens)
        atomic_write_bytes(folder / OFFSETS, offsets)
        manifest = {
            "format": STORE_VERSION,
            "key": key.digest(),
            "fields": asdict(key),
            "n_tokens": matrix.n_tokens,
            "dim": matrix.dim,
            "sha256": {TOKENS: hashlib.sha256(tokens).hexdigest(), OFFSETS: hashlib.sha256(offsets).hexdigest()},
        }
        atomic_write_bytes(folder / MANIFEST, (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())

    @staticmethod
    def _read(folder: Path, key: TokenStoreKey) -> tuple[TokenMatrix | None, str | None]:
        """(the mapped matrix, None), or (None, what failed)."""
        try:
            manifest = json.loads((folder / MANIFEST).read_text())
            if manifest.get("format") != STORE_VERSION or manifest.get("key") != key.digest():
                return None, f"{MANIFEST} is of another key or format"
            for name in (TOKENS, OFFSETS):
                if _file_sha256(folder / name) != manifest["sha256"][name]:
                    return None, f"{name} differs from its recorded sha256"
            vectors = np.load(folder / TOKENS, mmap_mode="r", allow_pickle=False)
            offsets = np.load(folder / OFFSETS, allow_pickle=False)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            return None, f"{type(exc).__name__}: {exc}"
        if (
            vectors.dtype != np.float16
            or vectors.ndim != 2
            or offsets.dtype != np.int64
            or offsets.shape != (key.n_docs + 1,)
            or offsets[0] != 0
            or offsets[-1] != vectors.shape[0]
            or bool(np.any(np.diff(offsets) < 0))
        ):
            return None, "shapes or dtypes disagree with the key"
        return TokenMatrix(vectors, offsets), None
