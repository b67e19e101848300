"""Approximate learned sparse search through pyseismic-lsr (``seismic``), only when asked for (``--index seismic``).

Syntax: ``seismic[:name=value,...]``, or ``seismic:exhaustive`` (defaults in brackets):

* build: ``n_postings`` [4000] postings kept per term (``max_fraction`` [1.5] times that at most),
  ``centroid_fraction`` [0.1] blocks per posting list, ``summary_energy`` [0.4] share of a block summary's mass
* search: ``query_cut`` [20] largest query weights used, ``heap_factor`` [0.9] how eagerly a block is skipped
  (a block whose summary scores below ``heap_factor`` times the current k-th score is skipped; 0 skips none),
  ``k_factor`` [2] candidates the index returns per query, as a multiple of top-k
* ``exhaustive``: every posting kept, every query term used, no block skipped (the settings under which the
  index must return what exact search does; tests check it)

Seismic stores weights as 16-bit floats, so its own scores are approximations. The ``k_factor x top_k``
documents it returns are rescored exactly from the CSR document matrix (float32 sparse dot) and ranked by
the rule of ``search.topk``: scores always equal exact search's, and the index only decides which documents
are candidates. pyseismic-lsr was chosen over splade-index after measuring both (docs/sparse.md,
benchmarks/sparse_search.py): splade-index is an exact term-at-a-time scorer with a dense per-query
accumulator (what ``search.sparse_exact`` does), not an approximate index.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from mtrbench.infra.errors import UserInputError
from mtrbench.search.hits import Hits
from mtrbench.search.sparse_exact import score_pool

SEISMIC = "seismic"
EXACT = "exact"
EXHAUSTIVE = "exhaustive"
BUILD_DEFAULTS: dict[str, float] = {
    "n_postings": 4000,
    "max_fraction": 1.5,
    "centroid_fraction": 0.1,
    "summary_energy": 0.4,
}
SEARCH_DEFAULTS: dict[str, float] = {"query_cut": 20, "heap_factor": 0.9, "k_factor": 2}
INTEGER = {"n_postings", "query_cut", "k_factor"}
SYNTAX = "exact, seismic, seismic:exhaustive or seismic:name=value,... (e.g. seismic:query_cut=20,heap_factor=0.9)"


@dataclass(frozen=True)
class InvertedSpec:
    """``--index`` for a learned sparse model: exact sparse products, or a seismic index and its settings."""

    kind: str  # EXACT | SEISMIC
    params: dict[str, float] = field(default_factory=dict)  # as given; defaults filled by ``settings``
    exhaustive: bool = False

    @property
    def approximate(self) -> bool:
        return self.kind != EXACT

    @classmethod
    def parse(cls, text: str | None) -> InvertedSpec:
        text = (text or EXACT).strip()
        if text == EXACT:
            return cls(EXACT)
        backend, _, rest = text.partition(":")
        if backend != SEISMIC:
            raise UserInputError(f"--index '{text}': a learned sparse model takes {SYNTAX}")
        parts = [p.strip() for p in rest.split(",") if p.strip()]
        if parts == [EXHAUSTIVE]:
            return cls(SEISMIC, exhaustive=True)
        params: dict[str, float] = {}
        for part in parts:
            name, _, value = part.partition("=")
            name = name.strip().lower()
            if name not in BUILD_DEFAULTS and name not in SEARCH_DEFAULTS:
                known = ", ".join([*BUILD_DEFAULTS, *SEARCH_DEFAULTS])
                raise UserInputError(f"--index '{text}': seismic takes {known} or exhaustive, not '{name}'")
            params[name] = _number(text, name, value)
        return cls(SEISMIC, params)

    def values(self, n_docs: int, vocabulary: int) -> dict[str, float]:
        """Every build and search setting, defaults filled; exhaustive ones depend on the corpus."""
        if self.exhaustive:
            full = {"n_postings": max(1, n_docs), "max_fraction": 1.0, "query_cut": vocabulary, "heap_factor": 0.0}
            return {**BUILD_DEFAULTS, **SEARCH_DEFAULTS, **full}
        return {**BUILD_DEFAULTS, **SEARCH_DEFAULTS, **self.params}

    def describe(self) -> str:
        if not self.approximate:
            return EXACT
        if self.exhaustive:
            return f"{SEISMIC}:{EXHAUSTIVE}"
        listed = ",".join(f"{k}={_text(v)}" for k, v in sorted(self.params.items()))
        return f"{SEISMIC}:{listed}" if listed else SEISMIC


def _number(text: str, name: str, value: str) -> float:
    try:
        number = int(value) if name in INTEGER else float(value)
    except ValueError:
        number = -1
    smallest = 0 if name == "heap_factor" else 1 if name in INTEGER else 1e-9
    if not number >= smallest or (name in ("centroid_fraction", "summary_energy") and number > 1):
        kind = "an integer >= 1" if name in INTEGER else "a number >= 0" if smallest == 0 else "a positive number"
        raise UserInputError(f"--index '{text}': {name} must be {kind}, got '{value}'")
    return number


def _text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


class SeismicSearcher:
    """A seismic index over a CSR document matrix, searched with CSR queries; candidates rescored exactly."""

    def __init__(self, spec: InvertedSpec, docs: sp.csr_matrix, num_threads: int = 0) -> None:
        try:
            import seismic
        except ImportError:
            raise UserInputError(
                f"--index {spec.describe()} needs pyseismic-lsr: pip install 'mtrbench[sparse]' (or pyseismic-lsr)"
            ) from None
        self.spec, self.docs, self.num_threads = spec, docs, num_threads
        self.values = spec.values(docs.shape[0], docs.shape[1])
        self._string = seismic.get_seismic_string()
        dataset = seismic.SeismicDataset(dim=docs.shape[1])
        dataset.add_documents_by_id(
            [str(i) for i in range(docs.shape[0])],
            docs.indices.astype(np.int64),
            docs.data.astype(np.float32, copy=False),
            docs.indptr.astype(np.int64),
        )
        build = {name: self.values[name] for name in BUILD_DEFAULTS}
        build["n_postings"] = int(build["n_postings"])
        self._index = seismic.SeismicIndex.build_from_dataset(dataset, **build, num_threads=num_threads)
        self._version = _version()

    def tuned(self, **search: float) -> SeismicSearcher:
        """The same built index searched with other search settings (``query_cut``, ``heap_factor``, ``k_factor``)."""
        unknown = set(search) - set(SEARCH_DEFAULTS)
        if unknown:
            raise ValueError(f"not search settings: {', '.join(sorted(unknown))}")
        other = copy.copy(self)
        other.values = {**self.values, **search}
        params = {**self.spec.params, **search} if not self.spec.exhaustive else dict(other.values)
        other.spec = InvertedSpec(SEISMIC, params)
        return other

    def settings(self) -> dict[str, Any]:
        return {
            "index": self.spec.describe(),
            "approximate": not self.spec.exhaustive,
            "library": f"pyseismic-lsr {self._version}",
            **{name: _number_value(value) for name, value in sorted(self.values.items())},
            "scores": "candidates rescored exactly (float32 sparse dot)",
        }

    def search(self, queries: sp.csr_matrix, top_k: int) -> Hits:
        """Top-k per query row: the index's ``k_factor x top_k`` candidates, rescored and ranked exactly."""
        hits: Hits = [([], []) for _ in range(queries.shape[0])]
        asked = [i for i in range(queries.shape[0]) if queries.indptr[i + 1] > queries.indptr[i]]
        if not asked or top_k < 1:
            return hits
        found = self._index.batch_search(
            np.array([str(i) for i in asked]).astype(self._string),
            [np.array([str(c) for c in queries[i].indices]).astype(self._string) for i in asked],
            [queries[i].data.astype(np.float32) for i in asked],
            k=int(self.values["k_factor"]) * top_k,
            query_cut=int(self.values["query_cut"]),
            heap_factor=float(self.values["heap_factor"]),
            num_threads=self.num_threads,
        )
        for row in found:  # rows come back in any order; each names its query
            if row:
                i = int(row[0][0])
                hits[i] = score_pool(queries[i], self.docs, np.array([int(r[2]) for r in row], dtype=np.int64), top_k)
        return hits


def _number_value(value: float) -> float | int:
    return int(value) if float(value).is_integer() else float(value)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pyseismic-lsr")
    except PackageNotFoundError:
        return "unknown"
