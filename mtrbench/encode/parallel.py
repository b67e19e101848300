"""One process per extra device: a persistent pool of engine workers (spawned, never forked).

The calling process keeps encoding on its own device; each worker loads the same tower on its
device once and then serves jobs. Every chunk is dealt out round-robin (so each device gets the same
mix of long and short texts), the workers write their rows into a shared-memory tensor, and the
chunk is complete when every device has answered. A worker that fails or dies fails the call with
its error instead of hanging it.
"""

from __future__ import annotations

import itertools
import queue
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from mtrbench.infra.errors import MtrbenchError

if TYPE_CHECKING:
    from mtrbench.encode.engine import EncodingEngine, EngineOptions
    from mtrbench.encode.towers import TowerSpec

_POLL_S = 1.0


def _worker(spec: TowerSpec, options: EngineOptions, device: str, jobs, results) -> None:
    from mtrbench.encode.engine import EncodingEngine
    from mtrbench.encode.towers import load_tower

    try:
        if device.startswith("cuda"):
            torch.cuda.set_device(torch.device(device))
        engine = EncodingEngine(load_tower(spec, device), options)
    except BaseException as exc:  # reported to the parent, which raises it
        results.put((None, device, f"could not load the model on {device}: {type(exc).__name__}: {exc}"))
        return
    while True:
        job = jobs.get()
        if job is None:
            return
        job_id, texts, rows, prompt, normalize, shared = job
        try:
            vectors = engine.encode(texts, prompt, normalize)
            shared[torch.from_numpy(rows)] = vectors.to("cpu", shared.dtype)
            results.put((job_id, device, None))
        except BaseException as exc:
            results.put((job_id, device, f"{type(exc).__name__}: {exc}"))


class DevicePool:
    def __init__(self, spec: TowerSpec, options: EngineOptions, devices: Sequence[str]) -> None:
        context = torch.multiprocessing.get_context("spawn")
        self.devices = list(devices)
        self._results = context.Queue()
        self._jobs = [context.Queue() for _ in self.devices]
        self._processes = [
            context.Process(
                target=_worker,
                args=(spec, options, device, jobs, self._results),
                name=f"mtrbench-encode-{device}",
                daemon=True,
            )
            for device, jobs in zip(self.devices, self._jobs)
        ]
        for process in self._processes:
            process.start()
        self._ids = itertools.count()

    def encode(
        self,
        engine: EncodingEngine,
        texts: list[str],
        prompt: str,
        normalize: bool,
        sizes: list[int],
        on_chunk,
        show_progress: bool,
        desc: str,
    ) -> torch.Tensor:
        n_devices = len(self.devices) + 1
        outputs = []
        start = 0
        for index, size in enumerate(sizes):
            chunk = texts[start : start + size]
            shares = [np.arange(d, size, n_devices) for d in range(n_devices)]
            shared = torch.empty(size, engine.tower.embedding_dim, dtype=engine.tower.dtype).share_memory_()
            pending = {}
            for jobs, rows, device in zip(self._jobs, shares[1:], self.devices):
                job_id = next(self._ids)
                jobs.put((job_id, [chunk[r] for r in rows], rows, prompt, normalize, shared))
                pending[job_id] = device
            mine = shares[0]
            local = engine._encode_local(
                [chunk[r] for r in mine],
                prompt,
                normalize,
                [len(mine)],
                None,
                show_progress,
                f"{desc} ({n_devices} devices, chunk {index + 1}/{len(sizes)})",
            )
            self._wait(pending)
            merged = shared.to(engine.device)
            merged[torch.from_numpy(mine).to(engine.device)] = local.to(merged.dtype)
            if on_chunk is not None:
                on_chunk(index, merged)
            outputs.append(merged)
            start += size
        return torch.cat(outputs)

    def _wait(self, pending: dict[int, str]) -> None:
        while pending:
            try:
                job_id, device, error = self._results.get(timeout=_POLL_S)
            except queue.Empty:
                dead = [p.name for p in self._processes if not p.is_alive()]
                if dead:
                    self.close()
                    raise MtrbenchError(f"encoding worker(s) {', '.join(dead)} died (out of memory?)") from None
                continue
            if error is not None:
                self.close()
                raise MtrbenchError(f"encoding on {device} failed: {error}")
            pending.pop(job_id, None)

    def close(self) -> None:
        for jobs in self._jobs:
            try:
                jobs.put(None)
            except (OSError, ValueError):
                pass
        for process in self._processes:
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
