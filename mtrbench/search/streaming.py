"""Exact search over a cache entry's shards read piece by piece from disk, in a bounded footprint.

Each piece is a row range of one shard, memory-mapped (``numpy.memmap`` over just that range of the
safetensors file) and copied out as float32, scored against a block of queries and folded into the
running top-k with ``search.topk``'s rule; the map is dropped before the next piece, so resident memory
stays near ``memory_bytes`` however large the corpus: embeddings four times the cap search in the same
run as in memory (tests/test_search_scale.py). The shards are the ones the cache checked (sha256) when it
made the entry complete; the searcher reads their safetensors header (JSON) for the data offset only.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mtrbench.errors import MtrbenchError
from mtrbench.search.topk import merge_top, select_top

QUERY_BLOCK = 4096
# numpy views of the safetensors dtypes; bf16 is read as its raw 16 bits and reinterpreted by torch
_DTYPES = {"F32": (np.float32, None), "F16": (np.float16, None), "BF16": (np.uint16, torch.bfloat16)}


@dataclass(frozen=True)
class ShardRef:
    path: str
    start: int  # corpus rows [start, end)
    end: int


def entry_shards(folder: str | Path) -> list[ShardRef]:
    """The shards of a complete cache entry, in corpus order."""
    folder = Path(folder)
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        shards = [ShardRef(str(folder / s["file"]), int(s["start"]), int(s["end"])) for s in manifest["shards"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise MtrbenchError(f"{folder / 'manifest.json'}: not a readable embedding cache manifest ({exc})") from None
    if not manifest.get("complete"):
        raise MtrbenchError(f"{folder}: the cache entry is incomplete (encode the corpus first)")
    return sorted(shards, key=lambda s: s.start)


class ShardReader:
    """Row ranges of one safetensors shard holding a single 2-d tensor."""

    def __init__(self, ref: ShardRef) -> None:
        self.ref = ref
        try:
            with open(ref.path, "rb") as handle:
                (size,) = struct.unpack("<Q", handle.read(8))
                header = json.loads(handle.read(size))
        except (OSError, ValueError, struct.error) as exc:
            raise MtrbenchError(f"{ref.path}: unreadable shard ({exc})") from None
        [(name, info)] = [(k, v) for k, v in header.items() if k != "__metadata__"]
        if info.get("dtype") not in _DTYPES or len(info.get("shape", ())) != 2:
            raise MtrbenchError(f"{ref.path}: tensor '{name}' has dtype {info.get('dtype')} and shape "
                                f"{info.get('shape')}; expected a 2-d F32, F16 or BF16 tensor")
        self.rows, self.dim = (int(x) for x in info["shape"])
        if self.rows != ref.end - ref.start:
            raise MtrbenchError(f"{ref.path}: {self.rows} rows, the manifest says {ref.end - ref.start}")
        self.np_dtype, self.torch_view = _DTYPES[info["dtype"]]
        self.itemsize = np.dtype(self.np_dtype).itemsize
        self.offset = 8 + size + int(info["data_offsets"][0])

    def read(self, first: int, last: int) -> torch.Tensor:
        """Rows [first, last) of this shard as a float32 host tensor (a copy; the map is released)."""
        view = np.memmap(self.ref.path, dtype=self.np_dtype, mode="r", offset=self.offset + first * self.dim *
                         self.itemsize, shape=(last - first, self.dim))
        try:
            raw = torch.from_numpy(np.array(view))
        finally:
            del view
        if self.torch_view is not None:
            raw = raw.view(self.torch_view)
        return raw.float()


def rows_per_piece(dim: int, itemsize: int, queries: int, memory_bytes: int) -> int:
    """Corpus rows scored at once: the mapped range, its float32 copy (and the raw copy for 16-bit
    shards), and a float32 score plus a comparison byte per query and row fit in ``memory_bytes``."""
    per_row = dim * itemsize + dim * 4 + (dim * itemsize if itemsize != 4 else 0) + queries * 9
    return max(1, memory_bytes // per_row)


def stream_search(queries: torch.Tensor, shards: Sequence[ShardRef], top_k: int, memory_bytes: int,
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """(scores, corpus positions), each (Q, min(top_k, rows)), best first, equal scores by position."""
    queries = queries.detach().to("cpu", torch.float32)
    readers = [ShardReader(ref) for ref in shards]
    for reader in readers:
        if reader.dim != queries.shape[1]:
            raise MtrbenchError(f"{reader.ref.path}: dimension {reader.dim}, queries have {queries.shape[1]}")
    scores, ids = [], []
    for qs in range(0, queries.shape[0], QUERY_BLOCK):
        q = queries[qs:qs + QUERY_BLOCK]
        best: tuple[torch.Tensor, torch.Tensor] | None = None
        for reader in readers:
            step = rows_per_piece(reader.dim, reader.itemsize, q.shape[0], memory_bytes)
            for first in range(0, reader.rows, step):
                last = min(reader.rows, first + step)
                docs = reader.read(first, last)
                positions = torch.arange(reader.ref.start + first, reader.ref.start + last)
                part = select_top(q @ docs.T, positions, top_k)
                del docs
                best = part if best is None else merge_top([best, part], top_k)
        if best is None:
            best = (torch.zeros(q.shape[0], 0), torch.zeros(q.shape[0], 0, dtype=torch.long))
        scores.append(best[0])
        ids.append(best[1])
    return torch.cat(scores), torch.cat(ids)
