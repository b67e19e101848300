"""Learned sparse vectors (SPLADE-style ``SparseEncoder``) as a ``scipy.sparse.csr_matrix``: one row per text,
one column per vocabulary entry, float32 weights, int32 column indices.

Encoding goes through sentence-transformers' own ``encode_query`` / ``encode_document`` (the checkpoint's own
prompts, router and pooling); mtrbench's packed engine has no MLM-head path yet. Each batch comes back as a
torch sparse tensor and is turned into CSR from its COO indices and values: no batch x vocabulary dense copy
is made here (sentence-transformers' pooling holds one per forward pass, as it must).

Optional pruning keeps each text's ``top_k`` largest weights (sentence-transformers' ``max_active_dims``):
a setting that changes scores, so retrievers record it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from mtrbench.infra.errors import ModelError
from mtrbench.infra.reporting import progress_bar

if TYPE_CHECKING:
    import torch
    from sentence_transformers import SparseEncoder

log = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 32
QUERY, DOCUMENT = "query", "document"
_fallback_logged = False


@dataclass(frozen=True)
class SparseEncoding:
    """How texts become sparse vectors; every field changes the vectors."""

    side: str  # QUERY or DOCUMENT: which sentence-transformers entry point (and prompt) encodes
    top_k: int | None = None  # keep this many largest weights per text; None: all
    batch_size: int = DEFAULT_BATCH_SIZE

    def __post_init__(self) -> None:
        if self.side not in (QUERY, DOCUMENT):
            raise ValueError(f"side must be {QUERY!r} or {DOCUMENT!r}, not {self.side!r}")
        if self.top_k is not None and self.top_k < 1 or self.batch_size < 1:
            raise ValueError(f"invalid sparse encoding {self}")


def log_fallback_once() -> None:
    """The issue's logged fallback: sparse models encode through sentence-transformers, not the packed engine."""
    global _fallback_logged
    if not _fallback_logged:
        log.info(
            "learned sparse encoding runs through sentence-transformers' SparseEncoder: "
            "mtrbench's packed engine has no MLM-head (SPLADE) path yet"
        )
        _fallback_logged = True


def vocabulary_size(model: SparseEncoder) -> int:
    """The width of the model's sparse vectors: its MLM head's vocabulary (sentence-transformers 6.2 reports the
    hidden size for a checkpoint whose pooling has not run yet), else what the model reports."""
    config = getattr(getattr(model[0], "auto_model", None), "config", None)
    size = getattr(config, "vocab_size", None)
    return int(size) if isinstance(size, int) and size > 0 else int(model.get_embedding_dimension())


def coo_batch_to_csr(batch: torch.Tensor, width: int) -> sp.csr_matrix:
    """A (rows x width) torch sparse COO tensor (or one 1-D sparse vector) as CSR, from its indices and values."""
    if batch.shape[-1] != width:
        raise ModelError(
            f"the model returned {batch.shape[-1]}-wide sparse vectors, expected its vocabulary of {width}"
        )
    batch = batch.coalesce().cpu()
    indices = batch.indices().numpy()
    values = batch.values().float().numpy().astype(np.float32, copy=False)
    if batch.dim() == 1:
        rows, cols, n_rows = np.zeros(indices.shape[1], dtype=np.int64), indices[0], 1
    else:
        rows, cols, n_rows = indices[0], indices[1], int(batch.shape[0])
    keep = values != 0  # explicit zeros would count as non-zeros in the index
    matrix = sp.csr_matrix(
        (values[keep], (rows[keep], cols[keep].astype(np.int32))), shape=(n_rows, width), dtype=np.float32
    )
    return as_canonical(matrix)


def as_canonical(matrix: sp.spmatrix) -> sp.csr_matrix:
    """CSR with float32 data, int32 indices, sorted column indices and no duplicates."""
    csr = sp.csr_matrix(matrix, dtype=np.float32)
    csr.sum_duplicates()
    csr.sort_indices()
    csr.indices = csr.indices.astype(np.int32, copy=False)
    csr.indptr = csr.indptr.astype(np.int32 if csr.nnz < 2**31 else np.int64, copy=False)
    return csr


def encode_sparse(
    model: SparseEncoder,
    texts: list[str],
    encoding: SparseEncoding,
    show_progress: bool = False,
    desc: str = "Encoding",
) -> sp.csr_matrix:
    """``texts`` as one CSR row each, encoded batch by batch with the model's own query or document path."""
    log_fallback_once()
    width = vocabulary_size(model)
    encode = model.encode_query if encoding.side == QUERY else model.encode_document
    parts: list[sp.csr_matrix] = []
    starts = range(0, len(texts), encoding.batch_size)
    for start in progress_bar(starts, show_progress=show_progress, desc=desc, unit="batch", total=len(starts)):
        batch = encode(
            texts[start : start + encoding.batch_size],
            batch_size=encoding.batch_size,
            convert_to_tensor=True,
            convert_to_sparse_tensor=True,
            show_progress_bar=False,
            max_active_dims=encoding.top_k,
        )
        parts.append(coo_batch_to_csr(_stacked(batch), width))
    if not parts:
        return as_canonical(sp.csr_matrix((0, width), dtype=np.float32))
    return as_canonical(sp.vstack(parts, format="csr"))


def _stacked(batch: Any) -> torch.Tensor:
    """sentence-transformers returns one sparse tensor for a list; a list of 1-D ones is stacked sparsely."""
    import torch

    if isinstance(batch, list):
        return torch.stack(batch)
    return batch
