"""Exact search over a cache entry's shards read piece by piece from disk, in a bounded footprint.

Each piece is a row range of one shard, read with one positioned read straight into a float32 buffer
that is allocated once and reused for every piece (16-bit shards go through a second reused buffer and
are widened into the first), scored against a block of queries into a reused score buffer and folded
into the running top-k with ``search.topk``'s rule. Nothing else grows with the corpus, so resident
memory stays under ``memory_bytes`` plus a small constant however large the corpus: embeddings four
times the cap search in the same run as in memory (tests/search/test_search_scale.py measures the peak RSS).
A memory map (numpy.memmap, safetensors' own mmap) would do the same reads, but its touched pages count
as resident until unmapped, and a fresh buffer per piece leaves the allocator's slack behind; one
reused buffer avoids both. The shards are the ones the cache checked (sha256) when it made the entry
complete; the searcher reads their safetensors header (JSON) for the data offset only.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mtrbench.infra.errors import MtrbenchError
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
            raise MtrbenchError(
                f"{ref.path}: tensor '{name}' has dtype {info.get('dtype')} and shape "
                f"{info.get('shape')}; expected a 2-d F32, F16 or BF16 tensor"
            )
        self.rows, self.dim = (int(x) for x in info["shape"])
        if self.rows != ref.end - ref.start:
            raise MtrbenchError(f"{ref.path}: {self.rows} rows, the manifest says {ref.end - ref.start}")
        self.np_dtype, self.torch_view = _DTYPES[info["dtype"]]
        self.itemsize = np.dtype(self.np_dtype).itemsize
        self.offset = 8 + size + int(info["data_offsets"][0])

    def read(
        self, first: int, last: int, out: torch.Tensor | None = None, staging: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Rows [first, last) of this shard as float32, in ``out`` (and, for 16-bit shards, through
        ``staging``) when given: buffers of at least that many rows of this width, reused across calls."""
        rows = last - first
        out = torch.empty(rows, self.dim) if out is None else out[:rows]
        if self.itemsize == 4:
            target = out
        else:
            target = torch.empty(rows, self.dim, dtype=torch.int16) if staging is None else staging[:rows]
        wanted = rows * self.dim * self.itemsize
        with open(self.ref.path, "rb", buffering=0) as handle:
            handle.seek(self.offset + first * self.dim * self.itemsize)
            got = handle.readinto(memoryview(target.numpy()).cast("B"))
        if got != wanted:
            raise MtrbenchError(f"{self.ref.path}: truncated ({got} of {wanted} bytes at row {first})")
        if self.itemsize != 4:
            out.copy_(target.view(self.torch_view or torch.float16))
        return out


def rows_per_piece(dim: int, itemsize: int, queries: int, memory_bytes: int) -> int:
    """Corpus rows scored at once: the float32 buffer (and the 16-bit staging buffer), the float32 score
    buffer, and select_top's per-score temporaries (a comparison byte; torch.topk's scratch, up to 16 bytes
    per score: measured on CPU at k = 100, where peak RSS grew 8.5 bytes per score more than at k = 10)
    fit in ``memory_bytes``."""
    per_row = dim * 4 + (dim * itemsize if itemsize != 4 else 0) + queries * 21
    return max(1, memory_bytes // per_row)


def stream_search(
    queries: torch.Tensor, shards: Sequence[ShardRef], top_k: int, memory_bytes: int, device: str | torch.device = "cpu"
) -> tuple[torch.Tensor, torch.Tensor]:
    """(scores, corpus positions), each (Q, min(top_k, rows)) on the host, best first, equal scores by
    position. ``shards`` must be contiguous (a complete entry, or a contiguous group of one). Scores are
    float32 dot products of the stored values; on ``device`` a GPU, each piece is read into the host
    buffer and copied over, and the scores and the running top-k stay on the GPU."""
    device = torch.device(device)
    queries = queries.detach().to(device, torch.float32)
    readers = [ShardReader(ref) for ref in shards]
    for reader, after in zip(readers, readers[1:]):
        if after.ref.start != reader.ref.end:
            raise MtrbenchError(
                f"{after.ref.path}: shards are not contiguous (rows {reader.ref.end} to {after.ref.start} missing)"
            )
    for reader in readers:
        if reader.dim != queries.shape[1]:
            raise MtrbenchError(f"{reader.ref.path}: dimension {reader.dim}, queries have {queries.shape[1]}")
    begin = readers[0].ref.start if readers else 0
    end = readers[-1].ref.end if readers else 0
    scores, ids = [], []
    for qs in range(0, queries.shape[0], QUERY_BLOCK):
        q = queries[qs : qs + QUERY_BLOCK]
        best: tuple[torch.Tensor, torch.Tensor] | None = None
        step = max(
            1,
            min(
                end - begin,
                rows_per_piece(
                    queries.shape[1], max((r.itemsize for r in readers), default=4), q.shape[0], memory_bytes
                ),
            ),
        )
        # Pieces of equal size that may span two shards: every piece allocates the same temporaries, so
        # the allocator reuses its blocks instead of accumulating slack over many odd-sized pieces.
        buffer = torch.empty(step, queries.shape[1])
        staging = (
            torch.empty(step, queries.shape[1], dtype=torch.int16) if any(r.itemsize != 4 for r in readers) else None
        )
        scores_buffer = torch.empty(q.shape[0] * step, device=device)
        for first in range(begin, end, step):
            last = min(end, first + step)
            docs = _read_rows(readers, first, last, buffer, staging).to(device)
            piece = scores_buffer[: q.shape[0] * (last - first)].view(q.shape[0], last - first)
            torch.matmul(q, docs.T, out=piece)
            part = select_top(piece, torch.arange(first, last, device=device), top_k)
            best = part if best is None else merge_top([best, part], top_k)
        if best is None:
            best = (torch.zeros(q.shape[0], 0), torch.zeros(q.shape[0], 0, dtype=torch.long))
        scores.append(best[0].cpu())
        ids.append(best[1].cpu())
    return torch.cat(scores), torch.cat(ids)


def _read_rows(
    readers: list[ShardReader], first: int, last: int, buffer: torch.Tensor, staging: torch.Tensor | None
) -> torch.Tensor:
    """Corpus rows [first, last) from the shards that hold them, into the start of ``buffer``."""
    filled = 0
    for reader in readers:
        lo, hi = max(first, reader.ref.start), min(last, reader.ref.end)
        if lo >= hi:
            continue
        reader.read(
            lo - reader.ref.start,
            hi - reader.ref.start,
            buffer[filled:],
            staging[filled:] if staging is not None else None,
        )
        filled += hi - lo
    return buffer[:filled]
