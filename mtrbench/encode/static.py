"""Static-shape packed batches run as CUDA graphs: one replay per batch instead of hundreds of kernel launches.

A static batch (``batching.StaticBatch``) always has the same token count; its sequence count and
attention bound take a few values. For each such shape the encoder's forward pass (token ids to token
states) is captured once into a CUDA graph with its own input buffers; a batch is then copied into
those buffers and the graph replayed, so the device never waits for Python to launch the next kernel.
Pooling runs after the replay, on the real sequences only, with the model's own pooling modules.

All graphs share one memory pool: batches run one after another and each graph's output is pooled
before the next replay is queued, so no graph's live data is another's scratch space.

Where graphs cannot run (CPU, a capture that fails, more shapes than ``max_graphs``) the same static
batch runs eagerly; the reason is logged once and kept in ``reason``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import torch

from mtrbench.infra.errors import first_line

log = logging.getLogger(__name__)

GRAPH_INPUTS = ("input_ids", "position_ids", "cu_seq_lens_q")


@dataclass
class _Graph:
    graph: torch.cuda.CUDAGraph
    inputs: dict[str, Any]
    output: torch.Tensor


class GraphRunner:
    """Token states of static batches, through one CUDA graph per batch shape where the device allows."""

    def __init__(self, states, device: torch.device, use_graphs: bool, max_graphs: int = 8) -> None:
        self.states = states  # fn(tensors on the device) -> (1, tokens, dim) token states
        self.device = device
        self.max_graphs = max_graphs
        self.reason: str | None = None
        self._graphs: dict[tuple, _Graph] = {}
        self._pool = None
        self._skipped: set[tuple] = set()
        if not use_graphs:
            self.reason = "off"
        elif device.type != "cuda":
            self.reason = "CUDA graphs need a CUDA device"
        self.use_graphs = self.reason is None

    @property
    def graphs(self) -> int:
        return len(self._graphs)

    def __call__(self, tensors: dict[str, Any]) -> torch.Tensor:
        if not self.use_graphs:
            return self.states(tensors)
        key = (
            tuple(tensors["input_ids"].shape),
            tuple(tensors["cu_seq_lens_q"].shape),
            int(tensors["max_length_q"]),
            tensors["input_ids"].device,
        )
        graph = self._graphs.get(key)
        if graph is None:
            if key in self._skipped or len(self._graphs) >= self.max_graphs:
                if key not in self._skipped:
                    self._skipped.add(key)
                    log.info("%d CUDA graphs held; a batch of a new shape runs without one", self.max_graphs)
                return self.states(tensors)
            graph = self._capture(key, tensors)
            if graph is None:
                return self.states(tensors)
        for name in GRAPH_INPUTS:
            graph.inputs[name].copy_(tensors[name], non_blocking=True)
        graph.graph.replay()
        return graph.output

    def _capture(self, key: tuple, tensors: dict[str, Any]) -> _Graph | None:
        inputs = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in tensors.items()}
        try:
            side = torch.cuda.Stream(self.device)
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(side):
                for _ in range(2):  # warm-up outside the capture: library handles, workspaces, compiled kernels
                    self.states(inputs)
            torch.cuda.current_stream(self.device).wait_stream(side)
            if self._pool is None:
                self._pool = torch.cuda.graph_pool_handle()
            graph = torch.cuda.CUDAGraph()
            # thread_local: the tokenizer thread keeps pinning host memory while this thread captures
            with torch.cuda.graph(graph, pool=self._pool, capture_error_mode="thread_local"):
                output = self.states(inputs)
        except Exception as exc:  # any op that cannot be captured: run eagerly from now on
            self.use_graphs = False
            self.reason = f"capture failed ({type(exc).__name__}: {first_line(exc)[:200]})"
            log.warning("CUDA graphs off, static batches run eagerly: %s", self.reason)
            torch.cuda.synchronize(self.device)
            return None
        captured = _Graph(graph, inputs, output)
        self._graphs[key] = captured
        return captured
