"""Corpus encoding on Ray: a Ray Data pipeline over the cache's blocks, an actor pool of mtrbench's
engine (one actor per GPU; CPU actors where a cluster has none), results streamed back to the driver.

The embedding cache decides what to encode (the gaps of an entry, cut into blocks on fixed corpus
positions) and this module only replaces *how*: ``RayEncoder`` is the cache's ``encode`` function. One
dataset row is one block; each actor encodes a block as one engine chunk, exactly as a single process
encodes it, so the embeddings - and the shards - do not depend on which machine or run made them, and
a single-machine run and a cluster run share a cache entry and resume each other's work.

Who writes shards: the driver, through the cache's own atomic shard-then-manifest path, as blocks
stream back in corpus order. Ray retries a task whose actor died (the actor is restarted and the block
encoded again); had actors written shards, a retried task could write one twice and two writers would
race on the manifest. With the driver as the only writer, under the entry's lock, a retry costs only
compute and a killed driver leaves whole shards or none, like any killed run.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from mtrbench.encode.engine import EncodingEngine, EngineOptions
from mtrbench.encode.towers import TowerSpec, load_tower
from mtrbench.infra.errors import MtrbenchError, first_line
from mtrbench.infra.reporting import progress_bar

log = logging.getLogger(__name__)

FAULT_ENV = "MTRBENCH_RAY_TEST_FAULT"  # tests only: "block=N,marker=PATH[,sleep=S]" (see Fault)


@dataclass(frozen=True)
class RaySettings:
    address: str | None = None  # None: a local Ray started by this process; else ray.init's address
    workers: int | None = None  # encoding actors; None: one per GPU of the cluster, else 2 CPU actors
    cpus_per_worker: float = 1.0

    def describe(self) -> dict:
        return {"address": self.address or "local", "workers": self.workers}


@dataclass(frozen=True)
class Fault:
    """A test hook: the actor that meets block ``block`` exits the process before answering, once (the
    marker file records that it happened); ``sleep`` slows every block so a driver can be killed mid-run."""

    block: int = -1
    marker: str = ""
    sleep: float = 0.0

    @classmethod
    def from_env(cls) -> Fault | None:
        raw = os.environ.get(FAULT_ENV, "").strip()
        if not raw:
            return None
        fields = dict(part.split("=", 1) for part in raw.split(",") if "=" in part)
        return cls(
            block=int(fields.get("block", -1)), marker=fields.get("marker", ""), sleep=float(fields.get("sleep", 0))
        )


def ray_module():
    try:
        import ray
    except ImportError:
        raise MtrbenchError("--ray needs Ray: pip install 'mtrbench[ray]'") from None
    return ray


def connect(settings: RaySettings) -> None:
    """Join (or start) the Ray cluster once per process."""
    ray = ray_module()
    logging.getLogger("ray.data").setLevel(logging.WARNING)  # per-dataset INFO lines would drown our progress
    if ray.is_initialized():
        return
    try:
        ray.init(
            address=settings.address,
            include_dashboard=False,
            logging_level=logging.WARNING,
            log_to_driver=False,
            configure_logging=False,
        )
    except (ConnectionError, ValueError, RuntimeError) as exc:
        where = settings.address or "a local cluster"
        raise MtrbenchError(f"cannot start or join Ray at {where}: {first_line(exc)}") from None


class BlockEncoder:
    """The actor: one engine on its device, one block per call."""

    def __init__(
        self, spec: TowerSpec, options: EngineOptions, prompt: str, normalize: bool, fault: Fault | None
    ) -> None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
        self.engine = EncodingEngine(load_tower(spec, device), options)
        self.prompt, self.normalize, self.fault = prompt, normalize, fault

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, list]:
        blocks, payloads, shapes = [], [], []
        for block, texts in zip(batch["block"], batch["texts"]):
            texts = [str(t) for t in texts]
            self._maybe_fail(int(block))
            vectors = self.engine.encode(texts, self.prompt, self.normalize, chunk_sizes=[len(texts)])
            host = vectors.detach().to("cpu").contiguous()
            blocks.append(int(block))
            payloads.append(host.view(torch.uint8).numpy().tobytes() if host.numel() else b"")
            shapes.append(f"{host.shape[0]}x{host.shape[1] if host.dim() == 2 else 0}:{str(host.dtype)[6:]}")
        return {"block": blocks, "payload": payloads, "shape": shapes}

    def _maybe_fail(self, block: int) -> None:
        fault = self.fault
        if fault is None:
            return
        if fault.sleep:
            import time

            time.sleep(fault.sleep)
        if block == fault.block and fault.marker and not os.path.exists(fault.marker):
            with open(fault.marker, "w") as handle:
                handle.write(str(os.getpid()))
            os._exit(1)  # the worker process dies mid-task, as on a lost node or an OOM kill


def _tensor(payload: bytes, shape: str) -> torch.Tensor:
    dims, dtype = shape.split(":")
    rows, dim = (int(x) for x in dims.split("x"))
    if not rows:
        return torch.empty(0, dim, dtype=getattr(torch, dtype))
    return torch.frombuffer(bytearray(payload), dtype=getattr(torch, dtype)).view(rows, dim)


class RayEncoder:
    """The embedding cache's ``encode`` function, run on a Ray cluster."""

    def __init__(
        self,
        spec: TowerSpec,
        options: EngineOptions,
        settings: RaySettings,
        prompt: str,
        normalize: bool,
        show_progress: bool = False,
    ) -> None:
        self.spec, self.options, self.settings = spec, options, settings
        self.prompt, self.normalize, self.show_progress = prompt, normalize, show_progress
        self.blocks_encoded = 0  # blocks answered in this process (tests count them)

    def workers(self) -> tuple[int, float]:
        """(actors, GPUs per actor) for the cluster joined."""
        ray = ray_module()
        gpus = int(ray.cluster_resources().get("GPU", 0))
        if self.settings.workers:
            return self.settings.workers, 1.0 if gpus else 0.0
        return (gpus, 1.0) if gpus else (2, 0.0)

    def __call__(self, texts: list[str], sizes: list[int], on_chunk: Callable[[int, torch.Tensor], None]) -> None:

        connect(self.settings)
        ray = ray_module()
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True
        context.enable_progress_bars = False
        starts = np.cumsum([0, *sizes])
        rows = [{"block": i, "texts": texts[starts[i] : starts[i + 1]]} for i in range(len(sizes))]
        if not rows:
            return
        actors, gpus = self.workers()
        dataset = ray.data.from_items(rows, override_num_blocks=len(rows)).map_batches(
            BlockEncoder,
            batch_size=1,
            batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=actors),
            num_gpus=gpus,
            num_cpus=self.settings.cpus_per_worker,
            fn_constructor_kwargs={
                "spec": self.spec,
                "options": self.options,
                "prompt": self.prompt,
                "normalize": self.normalize,
                "fault": Fault.from_env(),
            },
        )
        waiting: dict[int, torch.Tensor] = {}
        expected = 0
        bar = progress_bar(
            total=len(texts),
            desc=f"Encoding corpus (Ray, {actors} workers)",
            unit="text",
            show_progress=self.show_progress,
            leave=False,
            mininterval=0.5,
        )
        try:
            for row in dataset.iter_rows():
                waiting[int(row["block"])] = _tensor(row["payload"], str(row["shape"]))
                while expected in waiting:  # blocks go to the cache in corpus order, whatever order they came in
                    block = waiting.pop(expected)
                    on_chunk(expected, block)
                    self.blocks_encoded += 1
                    bar.update(block.shape[0])
                    expected += 1
        finally:
            bar.close()
        if expected != len(sizes):
            raise MtrbenchError(f"Ray returned {expected} of {len(sizes)} blocks")
