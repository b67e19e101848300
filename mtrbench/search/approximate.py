"""Approximate search with faiss, only when asked for (``--index faiss:...``); results record it.

Syntax: ``faiss:KIND[,name=value...]`` with KIND and its parameters (defaults in brackets):

* ``ivf-flat``: ``nlist`` [sqrt(N) rounded, >= 1], ``nprobe`` [min(nlist, 32)]; nprobe = nlist is exact
* ``ivf-pq``:   ``nlist``, ``nprobe`` as above, ``m`` sub-quantizers [dim / 8, must divide dim], ``nbits`` [8]
* ``hnsw``:     ``m`` neighbours [32], ``ef_construction`` [200], ``ef_search`` [128]

All indexes use inner product on the stored embeddings (normalized ones for cosine models), trained on
the corpus itself with a fixed seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from mtrbench.infra.errors import MtrbenchError

KINDS = {
    "ivf-flat": ("nlist", "nprobe"),
    "ivf-pq": ("nlist", "nprobe", "m", "nbits"),
    "hnsw": ("m", "ef_construction", "ef_search"),
}
EXACT = "exact"


@dataclass(frozen=True)
class IndexSpec:
    kind: str  # exact | ivf-flat | ivf-pq | hnsw
    params: dict[str, int] = field(default_factory=dict)

    @property
    def approximate(self) -> bool:
        return self.kind != EXACT

    @classmethod
    def parse(cls, text: str | None) -> IndexSpec:
        text = (text or EXACT).strip()
        if text == EXACT:
            return cls(EXACT)
        backend, _, rest = text.partition(":")
        parts = [p.strip() for p in rest.split(",") if p.strip()]
        if backend != "faiss" or not parts:
            raise MtrbenchError(
                f"--index '{text}': expected exact or faiss:KIND[,name=value...] with KIND one of "
                f"{', '.join(KINDS)} (e.g. faiss:ivf-flat,nlist=1024,nprobe=32)"
            )
        kind = parts[0].lower().replace("_", "-")
        if kind not in KINDS:
            raise MtrbenchError(f"--index '{text}': unknown faiss index '{parts[0]}' (one of {', '.join(KINDS)})")
        params = {}
        for part in parts[1:]:
            name, _, value = part.partition("=")
            name = name.strip().lower()
            if name not in KINDS[kind]:
                raise MtrbenchError(f"--index '{text}': {kind} takes {', '.join(KINDS[kind])}, not '{name}'")
            try:
                params[name] = int(value)
            except ValueError:
                params[name] = -1
            if params[name] < 1:
                raise MtrbenchError(f"--index '{text}': {name} must be a positive integer, got '{value}'")
        return cls(kind, params)

    def describe(self) -> str:
        return (
            EXACT
            if self.kind == EXACT
            else "faiss:" + ",".join([self.kind, *(f"{k}={v}" for k, v in sorted(self.params.items()))])
        )


class FaissIndex:
    def __init__(self, spec: IndexSpec, embeddings: torch.Tensor) -> None:
        try:
            import faiss
        except ImportError:
            raise MtrbenchError("--index faiss:... needs faiss: pip install 'mtrbench[faiss]'") from None
        vectors = np.ascontiguousarray(embeddings.detach().to("cpu", torch.float32).numpy())
        n, dim = vectors.shape
        p = dict(spec.params)
        if spec.kind == "hnsw":
            index = faiss.IndexHNSWFlat(dim, p.setdefault("m", 32), faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = p.setdefault("ef_construction", 200)
            index.hnsw.efSearch = p.setdefault("ef_search", 128)
        else:
            nlist = p.setdefault("nlist", max(1, min(n, round(math.sqrt(n)))))
            if nlist > n:
                raise MtrbenchError(f"--index {spec.describe()}: nlist={nlist} exceeds the corpus ({n} passages)")
            quantizer = faiss.IndexFlatIP(dim)
            if spec.kind == "ivf-flat":
                index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
            else:
                m = p.setdefault("m", max(1, dim // 8))
                if dim % m:
                    raise MtrbenchError(f"--index {spec.describe()}: m={m} must divide the dimension {dim}")
                index = faiss.IndexIVFPQ(quantizer, dim, nlist, m, p.setdefault("nbits", 8), faiss.METRIC_INNER_PRODUCT)
            index.cp.seed = 1234
            index.train(vectors)
            index.nprobe = min(p.setdefault("nprobe", min(nlist, 32)), nlist)
        index.add(vectors)
        self.index, self.spec, self.params = index, spec, p

    def settings(self) -> dict[str, Any]:
        return {"index": "faiss:" + self.spec.kind, "params": self.params, "approximate": True}

    def search(self, queries: torch.Tensor, top_k: int) -> tuple[torch.Tensor, torch.Tensor]:
        q = np.ascontiguousarray(queries.detach().to("cpu", torch.float32).numpy())
        k = min(top_k, self.index.ntotal)
        scores, ids = self.index.search(q, k)
        return torch.from_numpy(scores), torch.from_numpy(ids.astype(np.int64))
