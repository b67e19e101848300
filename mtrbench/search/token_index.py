"""Full-corpus late-interaction search through an approximate nearest-neighbour index over token vectors.

``--index voyager[:name=value,...]``: every passage token vector goes into one HNSW graph (Spotify's
``voyager``, inner product). A query is searched in two steps:

1. candidates: each query token's ``k_tokens`` nearest passage tokens (HNSW search depth ``ef``), mapped to
   the passages that own them;
2. the candidates are scored by exact MaxSim (search/maxsim.py) over the stored fp16 token vectors, and the
   top_k kept.

Every returned score is therefore the passage's exact MaxSim; the index decides only which passages are
scored. With ``k_tokens`` at least the number of passage tokens (``ef`` is raised to it) on a graph that reaches
every node, every passage is a candidate and the ranking is exact MaxSim's; a graph too sparse to reach k
tokens (a small ``m``) is one error line, never a silently shorter candidate list.

Parameters (defaults in brackets; docs/late-interaction.md has the measured recall): ``k_tokens`` [64],
``ef`` [max(k_tokens, 128)], ``m`` graph neighbours [8], ``ef_construction`` [40], ``storage``
[float32; e4m3 or float8 store a quarter of the bytes]. Why not fast-plaid (PLAID): it pins torch 2.11,
and this project runs torch 2.13.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mtrbench.encode.token_store import TokenMatrix
from mtrbench.infra.errors import MtrbenchError, UserInputError, first_line
from mtrbench.infra.reporting import progress_bar
from mtrbench.search.hits import Hits
from mtrbench.search.maxsim import QueryTokens, maxsim_rerank

EXACT = "exact"
VOYAGER = "voyager"
DEFAULTS = {"k_tokens": 64, "m": 8, "ef_construction": 40}  # measured: docs/late-interaction.md
STORAGES = ("float32", "e4m3", "float8")
ADD_BLOCK = 1 << 18  # token vectors converted to fp32 and added at once


@dataclass(frozen=True)
class TokenIndexSpec:
    kind: str  # exact | voyager
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def approximate(self) -> bool:
        return self.kind != EXACT

    @classmethod
    def parse(cls, text: str | None) -> TokenIndexSpec:
        if not text or text == EXACT:
            return cls(EXACT)
        kind, _, rest = text.partition(":")
        if kind == "faiss":
            raise UserInputError(
                f"--index {text}: faiss indexes single vectors; a multi-vector model searches with exact "
                "MaxSim (the default) or --index voyager[:k_tokens=K,ef=E,...]"
            )
        if kind != VOYAGER:
            raise UserInputError(f"--index {text}: a multi-vector model takes exact or voyager[:name=value,...]")
        params: dict[str, Any] = dict(DEFAULTS, storage="float32")
        for item in filter(None, rest.split(",")):
            name, _, value = item.partition("=")
            if name == "storage":
                if value not in STORAGES:
                    raise UserInputError(f"--index {text}: storage must be one of {', '.join(STORAGES)}")
                params[name] = value
                continue
            if name not in ("k_tokens", "ef", "m", "ef_construction"):
                raise UserInputError(
                    f"--index {text}: unknown parameter '{name}' (voyager takes k_tokens, ef, m, ef_construction, "
                    "storage)"
                )
            if not value.isascii() or not value.isdigit() or int(value) < 1:
                raise UserInputError(f"--index {text}: {name} must be a positive integer")
            params[name] = int(value)
        params.setdefault("ef", max(params["k_tokens"], 128))
        return cls(VOYAGER, params)

    def describe(self) -> str:
        if not self.approximate:
            return EXACT
        return self.kind + ":" + ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))


class VoyagerTokenIndex:
    """An HNSW graph over every passage token vector of a :class:`TokenMatrix`, row i as id i."""

    def __init__(self, spec: TokenIndexSpec, matrix: TokenMatrix, show_progress: bool = False, threads: int = -1):
        import voyager

        self.spec, self.matrix, self.threads = spec, matrix, threads
        storage = {
            "float32": voyager.StorageDataType.Float32,
            "e4m3": voyager.StorageDataType.E4M3,
            "float8": voyager.StorageDataType.Float8,
        }[spec.params["storage"]]
        began = time.perf_counter()
        self.index = voyager.Index(
            voyager.Space.InnerProduct,
            num_dimensions=matrix.dim,
            M=spec.params["m"],
            ef_construction=spec.params["ef_construction"],
            random_seed=1,
            max_elements=max(matrix.n_tokens, 1),
            storage_data_type=storage,
        )
        with progress_bar(
            total=matrix.n_tokens, show_progress=show_progress, desc="Indexing token vectors", unit="token"
        ) as bar:
            for start in range(0, matrix.n_tokens, ADD_BLOCK):
                block = np.asarray(matrix.vectors[start : start + ADD_BLOCK], dtype=np.float32)
                self.index.add_items(block, ids=range(start, start + len(block)), num_threads=threads)
                bar.update(len(block))
        self.build_seconds = time.perf_counter() - began

    def searching(self, **params: int) -> VoyagerTokenIndex:
        """The same graph searched with other query-time parameters (``k_tokens``, ``ef``): no rebuild."""
        unknown = set(params) - {"k_tokens", "ef"}
        if unknown:
            raise ValueError(f"only k_tokens and ef are query-time parameters, not {sorted(unknown)}")
        view = copy.copy(self)
        view.spec = TokenIndexSpec(self.spec.kind, {**self.spec.params, **params})
        return view

    def settings(self) -> dict[str, Any]:
        return {"index": self.spec.describe(), "library": "voyager", "params": self.spec.params, "approximate": True}

    def candidates(self, queries: QueryTokens) -> list[np.ndarray]:
        """Each query's candidate passages (sorted corpus positions)."""
        import voyager

        n_tokens = self.matrix.n_tokens
        k = min(int(self.spec.params["k_tokens"]), n_tokens)
        ef = max(int(self.spec.params["ef"]), k)
        vectors = queries.vectors.detach().cpu().float().numpy()
        owner = queries.owner.cpu().numpy()
        pools: list[np.ndarray] = []
        # a few thousand query tokens at a time bound the (tokens, k) neighbour array
        step = max(1, (1 << 24) // max(k, 1))
        found = []
        for start in range(0, len(vectors), step):
            try:
                ids, _ = self.index.query(vectors[start : start + step], k=k, num_threads=self.threads, query_ef=ef)
            except voyager.RecallError as exc:
                raise MtrbenchError(
                    f"--index {self.spec.describe()}: the graph reached fewer than k_tokens={k} passage tokens "
                    f"for a query token ({first_line(exc)}); lower k_tokens or build with a larger m"
                ) from None
            found.append(np.searchsorted(self.matrix.offsets, ids.astype(np.int64), side="right") - 1)
        docs = np.concatenate(found) if found else np.zeros((0, k), dtype=np.int64)
        for q in range(len(queries)):
            pools.append(np.unique(docs[owner == q]))
        return pools

    def search(self, queries: QueryTokens, top_k: int, length_normalize: bool = False) -> Hits:
        pools = self.candidates(queries)
        return maxsim_rerank(queries, self.matrix, [pool.tolist() for pool in pools], top_k, length_normalize)
