"""A corpus's learned sparse vectors on disk, keyed like dense embeddings (``encode.cache.CacheKey``: model,
revision, prompt, encoding settings such as top-k pruning, max length, corpus fingerprint).

Layout: ``<root>/sparse/<key digest>.npz`` holding the CSR arrays (``data`` float32, ``indices`` int32,
``indptr``), the ``shape`` and the ``key`` digest, written atomically (``mtrbench.infra.atomic``) and read
with ``allow_pickle=False``. A file that does not check out (unreadable, another key, inconsistent arrays,
non-finite weights) is reported, encoded again and rewritten.
"""

from __future__ import annotations

import io
import logging
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mtrbench.encode.cache import CacheKey, CacheReport, default_root
from mtrbench.infra.atomic import atomic_write_bytes
from mtrbench.infra.errors import MtrbenchError

log = logging.getLogger(__name__)

FOLDER = "sparse"  # beside the dense entries of the same cache root, which list only their own folders


class SparseCache:
    def __init__(self, root: str | Path | None = None) -> None:
        """``root``: the embedding cache root (``--cache-dir``; default $MTRBENCH_CACHE_DIR/embeddings)."""
        self.root = (Path(root).expanduser() if root else default_root()) / FOLDER

    def path(self, key: CacheKey) -> Path:
        return self.root / f"{key.digest()}.npz"

    def load_or_encode(
        self, key: CacheKey, encode: Callable[[], sp.csr_matrix], width: int
    ) -> tuple[sp.csr_matrix, CacheReport]:
        """The cached matrix when its file checks out, else ``encode()``'s, written for the next run."""
        digest, path = key.digest(), self.path(key)
        report = CacheReport(digest, shards=1)
        if path.exists():
            matrix, problem = read_matrix(path, digest, (key.n_docs, width))
            if matrix is not None:
                report.loaded, report.texts_loaded = 1, key.n_docs
                return matrix, report
            report.corrupt = 1
            report.messages.append(f"{path.name}: {problem}")
            log.warning("sparse vector cache: %s is unusable (%s); encoding the corpus again", path, problem)
        matrix = encode()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MtrbenchError(
                f"cannot create the embedding cache folder {self.root}: {exc.strerror} (use --cache-dir DIR or --no-cache)"
            ) from None
        atomic_write_bytes(path, matrix_bytes(matrix, digest), fsync=True)
        report.encoded, report.texts_encoded = 1, key.n_docs
        return matrix, report


def matrix_bytes(matrix: sp.csr_matrix, digest: str) -> bytes:
    buffer = io.BytesIO()
    np.savez(
        buffer,
        data=matrix.data.astype(np.float32, copy=False),
        indices=matrix.indices.astype(np.int32, copy=False),
        indptr=matrix.indptr.astype(np.int64, copy=False),
        shape=np.asarray(matrix.shape, dtype=np.int64),
        key=np.asarray(digest),
    )
    return buffer.getvalue()


def read_matrix(path: Path, digest: str, shape: tuple[int, int]) -> tuple[sp.csr_matrix | None, str]:
    """(the matrix, "") when the file holds this key's consistent CSR matrix of ``shape``, else (None, why)."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            arrays = {name: stored[name] for name in ("data", "indices", "indptr", "shape", "key")}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        return None, f"unreadable ({type(exc).__name__})"
    data, indices, indptr = arrays["data"], arrays["indices"], arrays["indptr"]
    if str(arrays["key"]) != digest:
        return None, "it holds another cache entry"
    if tuple(int(n) for n in arrays["shape"]) != shape:
        return None, f"shape {tuple(arrays['shape'])}, expected {shape}"
    if data.dtype != np.float32 or indices.dtype != np.int32 or data.shape != indices.shape:
        return None, "arrays of the wrong type or length"
    if indptr.shape != (shape[0] + 1,) or indptr[0] != 0 or indptr[-1] != data.size or np.any(np.diff(indptr) < 0):
        return None, "row boundaries inconsistent with the weights"
    if indices.size and (indices.min() < 0 or indices.max() >= shape[1]):
        return None, "a term id outside the vocabulary"
    if not np.isfinite(data).all():
        return None, "non-finite weights"
    return sp.csr_matrix((data, indices, indptr), shape=shape), ""
