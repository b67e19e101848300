"""Token-budget batching over length-sorted inputs, and the padded / packed arrays a batch becomes.

Batches are planned on token counts, not text counts: inputs are sorted by token length (longest
first, so an out-of-memory batch shows up at once) and packed until the batch's cost would pass the
budget. A padded batch costs ``longest * n`` tokens; a packed (unpadded) batch costs the sum of its
lengths. Token ids of a chunk of texts live in one flat array (``Ragged``) so that collating a
batch is a few vectorized numpy gathers, not a Python loop per token.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np


def bounds(lengths: np.ndarray, dtype: type = np.int64) -> np.ndarray:
    """Where each of back-to-back sequences of these lengths starts, plus the total: (n + 1,), from 0."""
    out = np.zeros(len(lengths) + 1, dtype=dtype)
    np.cumsum(lengths, out=out[1:])
    return out


def restarting_positions(lengths: np.ndarray, starts: np.ndarray, offset: int = 0) -> np.ndarray:
    """Position ids of back-to-back sequences, counting from ``offset`` again at each sequence's start."""
    total = int(lengths.sum())
    return np.arange(total, dtype=np.int64) - np.repeat(starts.astype(np.int64), lengths) + offset


@dataclass(frozen=True)
class Ragged:
    """Variable-length token id sequences: sequence i is ``flat[offsets[i]:offsets[i + 1]]``."""

    flat: np.ndarray  # int64
    offsets: np.ndarray  # int64, len = n + 1

    @classmethod
    def from_lists(cls, ids: list[list[int]]) -> Ragged:
        offsets = bounds(np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids)))
        flat = np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(offsets[-1]))
        return cls(flat, offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def take(self, rows: np.ndarray) -> Ragged:
        """The sequences ``rows``, in that order, as a new ``Ragged``."""
        flat, lengths = self.gather(np.asarray(rows, dtype=np.int64))
        return Ragged(flat, bounds(lengths))

    @classmethod
    def concat(cls, parts: list[Ragged]) -> Ragged:
        flat = np.concatenate([p.flat[: p.offsets[-1]] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
        lengths = np.concatenate([p.lengths for p in parts]) if parts else np.zeros(0, dtype=np.int64)
        return cls(flat.astype(np.int64, copy=False), bounds(lengths))

    def rows(self, rows: np.ndarray) -> list[list[int]]:
        return [self.flat[self.offsets[r] : self.offsets[r + 1]].tolist() for r in rows]

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(tokens of ``rows`` back to back, their lengths)."""
        lengths = self.lengths[rows]
        # index of every token: its sequence's start plus its position within the sequence
        within = restarting_positions(lengths, bounds(lengths)[:-1])
        return self.flat[np.repeat(self.offsets[rows], lengths) + within], lengths


def plan_batches(
    lengths: np.ndarray | list[int],
    token_budget: int,
    max_batch_size: int | None = None,
    packed: bool = False,
    sort: bool = True,
) -> list[np.ndarray]:
    """Positions of each batch, longest inputs first (ties keep input order; ``sort=False``: input order, for
    packed batches whose shapes should not depend on length); every batch fits ``token_budget`` except a
    single input longer than the budget, which gets a batch of its own."""
    if token_budget < 1:
        raise ValueError(f"token budget must be positive, got {token_budget}")
    if not sort and not packed:
        raise ValueError("unsorted batches are for packed batches only")
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(-lengths, kind="stable") if sort else np.arange(len(lengths))
    sorted_lengths = lengths[order]
    cap = max_batch_size or len(lengths)
    batches: list[np.ndarray] = []
    start, n = 0, len(order)
    while start < n:
        if packed:
            cumulative = np.cumsum(sorted_lengths[start : start + cap])
            size = int(np.searchsorted(cumulative, token_budget, side="right"))
        else:
            # sorted descending, so the first element is the batch's longest: size * longest <= budget
            size = token_budget // max(int(sorted_lengths[start]), 1)
        size = max(1, min(size, cap, n - start))
        batches.append(order[start : start + size])
        start += size
    return batches


def padded_arrays(
    tokens: Ragged, rows: np.ndarray, pad_id: int, padding_side: str = "right"
) -> tuple[np.ndarray, np.ndarray]:
    """(input_ids, attention_mask), each (n, longest) int64, as a tokenizer pads with ``padding=True``."""
    flat, lengths = tokens.gather(rows)
    longest = int(lengths.max()) if len(rows) else 0
    columns = np.arange(longest)
    if padding_side == "left":
        valid = columns[None, :] >= (longest - lengths)[:, None]
    else:
        valid = columns[None, :] < lengths[:, None]
    input_ids = np.full((len(rows), longest), pad_id, dtype=np.int64)
    input_ids[valid] = flat  # row-major boolean assignment keeps each row's tokens in order
    return input_ids, valid.astype(np.int64)


def packed_arrays(
    tokens: Ragged, rows: np.ndarray, position_offset: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(input_ids (1, T), position_ids (1, T), cu_seqlens (n + 1,) int32, longest) for sequences back to back;
    positions restart at ``position_offset`` for every sequence."""
    flat, lengths = tokens.gather(rows)
    cu = bounds(lengths, np.int32)
    positions = restarting_positions(lengths, cu[:-1], position_offset)
    return flat[None, :], positions[None, :], cu, int(lengths.max()) if len(rows) else 0


@dataclass(frozen=True)
class StaticBatch:
    """A packed batch padded to a fixed shape, so that every full batch has the same tensor shapes (what CUDA
    graph replay and compiled kernels need). The real sequences come first; filler sequences of padding
    tokens (each at most ``max_length`` long, attending only to themselves) take up the rest of the tokens,
    and the sequence count is rounded up to a multiple of the granularity with more fillers."""

    input_ids: np.ndarray  # (1, tokens) int64
    position_ids: np.ndarray  # (1, tokens) int64
    cu_seqlens: np.ndarray  # (sequences + 1,) int32; cu_seqlens[: real + 1] bound the real sequences
    max_length: int  # the attention kernel's per-sequence bound: the real longest rounded up to a multiple of 128
    real: int  # real sequences
    used: int  # tokens of the real sequences

    def tensors(self) -> dict:
        """The batch as the engine hands it to a tower: CPU tensors, plus the ints that tell it apart."""
        import torch

        return {
            "input_ids": torch.from_numpy(self.input_ids),
            "position_ids": torch.from_numpy(self.position_ids),
            "cu_seq_lens_q": torch.from_numpy(self.cu_seqlens),
            "max_length_q": self.max_length,
            "real": self.real,
            "used": self.used,
        }


LENGTH_STEP = 128  # flash attention's query block: rounding the longest up to it changes no launch


def static_arrays(
    tokens: Ragged,
    rows: np.ndarray,
    total_tokens: int,
    granularity: int,
    pad_id: int,
    position_offset: int = 0,
    position_limit: int | None = None,
) -> StaticBatch:
    """``rows`` packed back to back, then filler sequences up to exactly ``total_tokens`` tokens, with a sequence
    count rounded up to a multiple of ``granularity``. Needs at least ``granularity`` spare tokens, so that
    every filler holds at least one token (a zero-length sequence is left out on purpose: pooling would
    index past the end). ``position_limit``: the model's positions (a filler never runs past them)."""
    flat, lengths = tokens.gather(rows)
    used = int(lengths.sum())
    spare = total_tokens - used
    if spare < granularity:
        raise ValueError(f"a static batch needs {granularity} spare tokens, {spare} are left of {total_tokens}")
    longest = int(lengths.max()) if len(rows) else 1
    max_length = -(-max(longest, 1) // LENGTH_STEP) * LENGTH_STEP
    if position_limit is not None:
        max_length = max(longest, min(max_length, position_limit))
    fillers = -(-spare // max_length)
    fillers += -(len(rows) + fillers) % granularity
    # spare >= granularity guarantees fillers <= spare: ceil(spare / max_length) + granularity - 1 <= spare
    base, extra = divmod(spare, fillers)
    filler_lengths = np.full(fillers, base, dtype=np.int64)
    filler_lengths[:extra] += 1
    all_lengths = np.concatenate([lengths, filler_lengths])
    cu = bounds(all_lengths, np.int32)
    input_ids = np.concatenate([flat, np.full(spare, pad_id, dtype=np.int64)])
    positions = restarting_positions(all_lengths, cu[:-1], position_offset)
    return StaticBatch(input_ids[None, :], positions[None, :], cu, max_length, len(rows), used)
