"""Exact search split over workers: each searches its own contiguous group of a cache entry's shards
(reading them from the shared cache folder) and returns its top-k per query; the driver merges the
lists exactly (``search.topk.merge_top``: one vectorized sort, equal scores by corpus position), so the
run equals a single-device search, ties included. Workers are Ray tasks (one per GPU or per requested
worker) or, without Ray, the groups are searched one after another in this process."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from mtrbench.encode.distributed import ray_module
from mtrbench.search.streaming import ShardRef, stream_search
from mtrbench.search.topk import merge_top

WHOLE_SHARD = 1 << 62  # no memory cap: a worker reads each of its shards in one piece


def split_shards(shards: Sequence[ShardRef], workers: int) -> list[list[ShardRef]]:
    """At most ``workers`` contiguous groups of about equal rows (a shard is never split)."""
    total = sum(s.end - s.start for s in shards)
    groups: list[list[ShardRef]] = [[] for _ in range(max(1, min(workers, len(shards))))]
    done = 0
    for shard in shards:
        # the group whose share of the corpus this shard's midpoint falls in
        index = min(len(groups) - 1, int((done + (shard.end - shard.start) / 2) * len(groups) / max(total, 1)))
        groups[index].append(shard)
        done += shard.end - shard.start
    return [g for g in groups if g]


def _search_group(queries: torch.Tensor, group: list[ShardRef], top_k: int, memory_bytes: int | None):
    """One worker: its shards from disk, on its GPU when Ray gave it one."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    return stream_search(queries, group, top_k, memory_bytes or WHOLE_SHARD, device)


def sharded_search(
    queries: torch.Tensor,
    shards: Sequence[ShardRef],
    top_k: int,
    workers: int,
    memory_bytes: int | None = None,
    use_ray: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(scores, corpus positions), each (Q, min(top_k, rows)); ``memory_bytes`` caps each worker's footprint."""
    groups = split_shards(shards, workers)
    queries = queries.detach().to("cpu", torch.float32)
    if use_ray:
        ray = ray_module()
        gpus = 1 if ray.cluster_resources().get("GPU", 0) else 0
        remote = ray.remote(num_cpus=1, num_gpus=gpus)(_search_group)
        shared = ray.put(queries)
        parts = ray.get([remote.remote(shared, group, top_k, memory_bytes) for group in groups])
    else:
        parts = [_search_group(queries, group, top_k, memory_bytes) for group in groups]
    if not parts:
        return torch.zeros(queries.shape[0], 0), torch.zeros(queries.shape[0], 0, dtype=torch.long)
    return merge_top(parts, top_k)
