"""Pooling token states into one vector per text, for padded ``(n, L, D)`` and packed ``(T, D)`` layouts.

Used by raw-transformers towers (dual encoders). Sentence-transformers models keep their own pooling
modules, so their configuration is honoured exactly. Half-precision states are summed in fp32, as
sentence-transformers does, then cast back.
"""

from __future__ import annotations

import torch

from mtrbench.infra.errors import MtrbenchError

POOLING_MODES = ("cls", "mean", "last")


def check_pooling(mode: str) -> str:
    if mode not in POOLING_MODES:
        raise MtrbenchError(f"--pooling must be one of {', '.join(POOLING_MODES)}, got '{mode}'")
    return mode


def pool_padded(hidden: torch.Tensor, attention_mask: torch.Tensor, mode: str) -> torch.Tensor:
    """``hidden`` (n, L, D), ``attention_mask`` (n, L) of 0/1 (right or left padding)."""
    mask = attention_mask.to(torch.bool)
    rows = torch.arange(hidden.shape[0], device=hidden.device)
    positions = torch.arange(hidden.shape[1], device=hidden.device)
    if mode == "cls":
        first = torch.where(mask, positions, hidden.shape[1]).min(dim=1).values
        return hidden[rows, first.clamp(max=hidden.shape[1] - 1)]
    if mode == "last":
        last = torch.where(mask, positions, -1).max(dim=1).values
        return hidden[rows, last.clamp(min=0)]
    if mode == "mean":
        accumulate = torch.float32 if hidden.dtype in (torch.float16, torch.bfloat16) else hidden.dtype
        weights = mask.unsqueeze(-1).to(accumulate)
        total = (hidden.to(accumulate) * weights).sum(dim=1)
        count = weights.sum(dim=1).clamp(min=1e-9)
        return (total / count).to(hidden.dtype)
    raise ValueError(f"unknown pooling mode {mode!r}")


def pool_packed(hidden: torch.Tensor, cu_seqlens: torch.Tensor, mode: str) -> torch.Tensor:
    """``hidden`` (T, D) or (1, T, D): sequences back to back, sequence i spans cu_seqlens[i]:cu_seqlens[i+1]."""
    if hidden.dim() == 3:
        hidden = hidden[0]
    starts = cu_seqlens[:-1].long()
    ends = cu_seqlens[1:].long()
    if mode == "cls":
        return hidden[starts]
    if mode == "last":
        return hidden[ends - 1]
    if mode == "mean":
        accumulate = torch.float32 if hidden.dtype in (torch.float16, torch.bfloat16) else hidden.dtype
        lengths = ends - starts
        # output_size spares a device-to-host sync
        segment = torch.repeat_interleave(
            torch.arange(len(lengths), device=hidden.device), lengths, output_size=hidden.shape[0]
        )
        total = torch.zeros(len(lengths), hidden.shape[1], device=hidden.device, dtype=accumulate)
        total.index_add_(0, segment, hidden.to(accumulate))
        return (total / lengths.clamp(min=1).unsqueeze(1).to(accumulate)).to(hidden.dtype)
    raise ValueError(f"unknown pooling mode {mode!r}")
