"""The encoding engine every dense retriever uses: texts in, one embedding per text out, in input order.

How it keeps the accelerator busy:

* a producer thread tokenizes ahead (windows of up to 16k texts inside one chunk, one window ahead of
  the batches, split over tokenizer threads on CUDA), sorts each window by token length, cuts token-budget
  batches and collates them into (pinned, on CUDA) CPU tensors, which wait in a bounded queue;
* the main thread copies each batch to the device with ``non_blocking`` copies, runs the model and
  scatters the vectors into one preallocated output tensor that stays on the device: there is no
  host synchronisation per batch;
* on CUDA, where the installed torch has a varlen flash kernel and the model passes a self-check,
  batches are packed without padding (see ``mtrbench.encode.varlen``); elsewhere they are padded
  to their longest sequence, which length sorting keeps short;
* ``mode="static"``: packed batches are padded to exactly the token budget (``batching.static_arrays``),
  in input order rather than length order so that their sequence counts stay close, and each batch shape
  is captured once as a CUDA graph (``mtrbench.encode.static``); the last, partly filled batch of a
  window is carried into the next window of the same chunk. ``mode="fused"`` also compiles the layers'
  elementwise steps (``mtrbench.encode.fusion``). Both are checked against the eager packed path on
  probe texts when the engine is built, and fall back to it with a logged reason;
* several devices: one worker process per extra device (``DevicePool``, at the end of this module);
* on CPU, the memory each batch's forward pass freed goes back to the system before the next one
  (``mtrbench.encode.host_memory``), so the resident size stays that of one batch.

``on_chunk`` lets a caller (the embedding cache) persist results chunk by chunk while the producer is
already tokenizing the next chunk, so writing shards does not drain the pipeline.
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from mtrbench.encode import varlen
from mtrbench.encode.batching import Ragged, plan_batches
from mtrbench.encode.fusion import fuse_blocks, unfuse_blocks
from mtrbench.encode.host_memory import release_freed_memory
from mtrbench.encode.static import GraphRunner
from mtrbench.encode.towers import Tower, TowerSpec, load_tower
from mtrbench.infra.errors import MtrbenchError, first_line
from mtrbench.infra.reporting import progress_bar

log = logging.getLogger(__name__)

CPU_TOKEN_BUDGET = 4_096  # measured: small batches beat large ones on CPU (cache locality)
CUDA_TOKEN_BUDGET = 65_536
FIRST_WINDOW = 2_048  # texts tokenized and sorted first, so the device starts early
MAX_WINDOW = 16_384  # texts tokenized and length-sorted together (windows double from FIRST_WINDOW)
UNPAD_CHOICES = ("auto", "on", "off")
MODE_CHOICES = ("auto", "eager", "static", "fused")
STATIC_GRANULARITY = 32  # a static batch's sequence count is a multiple of this (few distinct graph shapes)
STATIC_FIRST_WINDOW = 256  # static batches need no length sort, so the first window can be small
STATIC_FILL = 0.8  # a last batch filled less than this runs eagerly rather than padded to the budget

ChunkCallback = Callable[[int, torch.Tensor], None]
_PROBE = [
    "a short one",
    "",
    "a sentence of middling length about rivers and the bridges over them " * 3,
    "long " * 2000,
    "twelve words in this line make it neither short nor very long at all",
]


@dataclass
class EngineOptions:
    token_budget: int | None = None  # padded (or packed) tokens per batch; None: by device
    max_batch_size: int | None = None  # at most this many texts per batch; None: budget only
    unpad: str = "auto"  # packed batches: auto (CUDA, when checked correct) | on | off
    chunk_size: int = 50_000  # texts per reported chunk (and per dispatch to several devices)
    prefetch: int = 6  # collated batches waiting for the device
    tokenizer_threads: int | None = None
    # auto (fused on CUDA, else eager) | eager | static (fixed-shape packed batches, CUDA graphs) | fused (static +
    # compiled blocks)
    mode: str = "auto"
    max_graphs: int = 8  # CUDA graphs kept (one per static batch shape); other shapes run without one

    def budget_for(self, device: torch.device) -> int:
        if self.token_budget:
            return self.token_budget
        return CUDA_TOKEN_BUDGET if device.type == "cuda" else CPU_TOKEN_BUDGET


@dataclass
class _Batch:
    positions: np.ndarray  # into the whole input
    tensors: dict[str, Any]
    tokens: int


@dataclass
class _ChunkEnd:
    index: int
    start: int
    end: int


class _Failed:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


_DONE = object()


class EncodingEngine:
    def __init__(
        self, tower: Tower, options: EngineOptions | None = None, devices: Sequence[str] | None = None
    ) -> None:
        self.tower = tower
        self.options = options or EngineOptions()
        if self.options.unpad not in UNPAD_CHOICES:
            raise MtrbenchError(f"--unpad must be one of {', '.join(UNPAD_CHOICES)}, got '{self.options.unpad}'")
        if self.options.mode not in MODE_CHOICES:
            raise MtrbenchError(f"--engine-mode must be one of {', '.join(MODE_CHOICES)}, got '{self.options.mode}'")
        self.device = tower.device
        self.token_budget = self.options.budget_for(self.device)
        self.calls = 0  # encode() calls that ran the model (tests count them to prove cache hits)
        self.packed = self._decide_packing()
        self._oom_cap: int | None = None
        self._runner: GraphRunner | None = None
        self.static_reason: str | None = None  # why the asked mode is not (fully) used
        self.mode_used = "eager"
        self.static_agreement: float | None = None
        self.static = self._decide_static()
        self.batches = {"static": 0, "other": 0}  # batches run, by kind (the benchmark reports the share)
        self._pool: DevicePool | None = None
        self.devices = list(devices or [str(self.device)])
        if len(self.devices) > 1:
            self._pool = DevicePool(tower.spec, self.options, self.devices[1:])

    # -- configuration ------------------------------------------------------------------------------

    def _decide_packing(self) -> bool:
        choice = self.options.unpad
        if choice == "off":
            return False
        if choice == "auto" and varlen.kernel_name(self.device, self.tower.dtype) == "reference":
            return False  # the reference loop is exact but slower than padding; only used when asked for
        if not self.tower.enable_packing():
            if choice == "on":
                log.warning("packed batches requested but this model cannot run them; padding instead")
            return False
        try:
            agreement = self._packing_agreement()
        except Exception as exc:  # a kernel that rejects this model/device: padding still works
            log.warning("packed batches failed on probe texts (%s: %s); padding instead", type(exc).__name__, exc)
            return False
        if agreement < 0.999:
            log.warning(
                "packed batches disagree with padded ones on probe texts (min cosine %.5f); padding instead", agreement
            )
            return False
        return True

    @torch.inference_mode()
    def _packing_agreement(self) -> float:
        self.tower.prepare("")
        tokens = Ragged.from_lists(self.tower.tokenize(_PROBE))
        rows = np.arange(len(_PROBE))
        padded = self.tower.forward(self._to_device(self.tower.collate(tokens, rows, _PROBE, "", packed=False)), False)
        packed = self.tower.forward(self._to_device(self.tower.collate(tokens, rows, _PROBE, "", packed=True)), True)
        return float(F.cosine_similarity(padded.float(), packed.float(), dim=-1).min())

    def _decide_static(self) -> bool:
        """Whether batches are static (and fused): the asked mode when it passes its checks, else the next
        simpler one (fused -> static -> eager), each refusal logged with its reason. ``auto`` is fused on
        CUDA (measured fastest there, benchmarks/README.md) and eager elsewhere, and refusals under it are
        logged at info level: nobody asked for that mode by name."""
        asked = self.options.mode
        mode = asked if asked != "auto" else ("fused" if self.device.type == "cuda" and self.packed else "eager")
        report = log.warning if asked != "auto" else log.info
        if mode == "eager":
            return False
        if not self.packed:
            self.static_reason = "static batches are packed batches, and this engine pads (see --unpad)"
        elif self.token_budget < self.tower.max_length + STATIC_GRANULARITY:
            self.static_reason = (
                f"the token budget {self.token_budget} is under the model's {self.tower.max_length} tokens "
                f"+ {STATIC_GRANULARITY}"
            )
        if self.static_reason is not None:
            report("--engine-mode %s not used: %s; eager batches instead", asked, self.static_reason)
            return False
        model = self.tower.transformer()
        reasons = []
        for attempt in ("fused", "static") if mode == "fused" else ("static",):
            if attempt == "fused" and fuse_blocks(model, self.token_budget) == 0:
                reasons.append("fused: no BERT-style blocks to compile in this model")
                continue
            failure = self._try_static()
            if failure is None:
                self.mode_used = attempt
                if reasons:
                    report("--engine-mode %s: %s; %s instead", asked, "; ".join(reasons), attempt)
                    self.static_reason = "; ".join(reasons)
                return True
            reasons.append(f"{attempt}: {failure}")
            unfuse_blocks(model)
            self._runner = None
        self.static_reason = "; ".join(reasons)
        report("--engine-mode %s not used (%s); eager batches instead", asked, self.static_reason)
        return False

    def _try_static(self) -> str | None:
        """Build the graph runner and check static batches on probe texts: None, or why they cannot be used."""
        self._runner = GraphRunner(self.tower.packed_states, self.device, True, self.options.max_graphs)
        try:
            agreement = self._static_agreement()
        except Exception as exc:  # a compiler or kernel that rejects this model/device: eager batches still work
            return f"failed on probe texts ({type(exc).__name__}: {first_line(exc)})"
        self.static_agreement = agreement
        floor = 0.999 if self.tower.dtype in (torch.float16, torch.bfloat16) else 0.9999
        if agreement < floor:
            return f"disagrees with eager batches on probe texts (min cosine {agreement:.5f})"
        return None

    @torch.inference_mode()
    def _static_agreement(self) -> float:
        """Min cosine between the static path (fillers, graph, compiled blocks) and eager packed batches."""
        self.tower.prepare("")
        tokens = Ragged.from_lists(self.tower.tokenize(_PROBE))
        assert self._runner is not None
        lowest = 1.0
        # as many static batches as the probes need under this budget (one, unless the budget is small)
        for rows in plan_batches(tokens.lengths, self.token_budget - STATIC_GRANULARITY, packed=True, sort=False):
            static = self.tower.collate_static(tokens, rows, self.token_budget, STATIC_GRANULARITY)
            ours = self.tower.forward_static(self._to_device(static), self._runner)
            texts = [_PROBE[r] for r in rows]
            plain = self.tower.collate(tokens, rows, texts, "", packed=True)
            eager = self.tower.forward(self._to_device(plain), True)
            lowest = min(lowest, float(F.cosine_similarity(ours.float(), eager.float(), dim=-1).min()))
        return lowest

    def settings(self) -> dict[str, Any]:
        return {
            "token_budget": self.token_budget,
            "max_batch_size": self.options.max_batch_size,
            "packed": self.packed,
            "attention": varlen.kernel_name(self.device, self.tower.dtype) if self.packed else "padded",
            "devices": self.devices,
            "mode": self.mode_used if self.static else "eager",
            **({"mode_asked": self.options.mode} if self.options.mode != "auto" else {}),
            **({"mode_reason": self.static_reason} if self.static_reason else {}),
            **(
                {
                    "cuda_graphs": self._runner.use_graphs,
                    "cuda_graphs_reason": self._runner.reason,
                    "static_agreement": self.static_agreement,
                }
                if self._runner is not None
                else {}
            ),
        }

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    # -- encoding -----------------------------------------------------------------------------------

    def encode(
        self,
        texts: Sequence[str],
        prompt: str = "",
        normalize: bool = False,
        show_progress: bool = False,
        desc: str = "Encoding",
        chunk_sizes: Sequence[int] | None = None,
        on_chunk: ChunkCallback | None = None,
    ) -> torch.Tensor:
        """Embeddings (len(texts), dim) on the engine's device, row i for texts[i].

        ``chunk_sizes``: consecutive chunks (summing to len(texts)) sorted and reported separately;
        ``on_chunk(i, embeddings_of_chunk_i)`` is called as each chunk completes, in order.
        """
        texts = list(texts)
        sizes = list(chunk_sizes) if chunk_sizes is not None else _even_chunks(len(texts), self.options.chunk_size)
        if sum(sizes) != len(texts):
            raise ValueError(f"chunk sizes sum to {sum(sizes)}, not {len(texts)} texts")
        if not texts:
            return torch.empty(0, self.tower.embedding_dim, dtype=self.tower.dtype, device=self.device)
        self.calls += 1
        if self._pool is not None and len(texts) >= 4 * len(self.devices):
            return self._pool.encode(self, texts, prompt, normalize, sizes, on_chunk, show_progress, desc)
        return self._encode_local(texts, prompt, normalize, sizes, on_chunk, show_progress, desc)

    @torch.inference_mode()
    def _encode_local(
        self,
        texts: list[str],
        prompt: str,
        normalize: bool,
        sizes: list[int],
        on_chunk: ChunkCallback | None,
        show_progress: bool,
        desc: str,
    ) -> torch.Tensor:

        self.tower.prepare(prompt)
        packed = self.packed and getattr(self.tower, "fast_tokenization", True)
        static = packed and self.static
        out: torch.Tensor | None = None
        stop = threading.Event()
        batches: queue.Queue = queue.Queue(maxsize=max(1, self.options.prefetch))
        threads = self._tokenizer_threads()
        with ThreadPoolExecutor(threads) if threads > 1 else nullcontext() as executor:
            producer = threading.Thread(
                target=self._produce,
                name="mtrbench-tokenize",
                daemon=True,
                args=(texts, prompt, packed, static, sizes, batches, stop, executor, threads),
            )
            producer.start()
            bar = progress_bar(
                total=len(texts), desc=desc, unit="text", show_progress=show_progress, leave=False, mininterval=0.5
            )
            try:
                while True:
                    item = batches.get()
                    if item is _DONE:
                        break
                    if isinstance(item, _Failed):
                        raise item.exc
                    if isinstance(item, _ChunkEnd):
                        if on_chunk is not None:
                            on_chunk(
                                item.index,
                                out[item.start : item.end]
                                if out is not None
                                else torch.empty(
                                    0, self.tower.embedding_dim, dtype=self.tower.dtype, device=self.device
                                ),
                            )
                        continue
                    for positions, vectors in self._run(item, packed):
                        if normalize:
                            vectors = F.normalize(vectors, p=2, dim=-1)
                        if out is None:
                            out = torch.empty(len(texts), vectors.shape[-1], dtype=vectors.dtype, device=self.device)
                        index = torch.from_numpy(positions)
                        if self.device.type == "cuda":
                            index = index.pin_memory().to(self.device, non_blocking=True)
                        out.index_copy_(0, index, vectors.to(out.dtype))
                    if self.device.type == "cpu":
                        release_freed_memory()  # the batch's activations, or the peak RSS climbs batch by batch
                    bar.update(len(item.positions))
            finally:
                stop.set()
                bar.close()
                _drain(batches)
                producer.join(timeout=30)
        assert out is not None
        return out

    def _tokenizer_threads(self) -> int:
        if self.options.tokenizer_threads:
            return self.options.tokenizer_threads
        if self.device.type != "cuda":
            return 1  # on CPU the model wants every core; the producer thread alone keeps up
        return max(1, min(8, (os.cpu_count() or 2) - 1))

    def _produce(
        self,
        texts: list[str],
        prompt: str,
        packed: bool,
        static: bool,
        sizes: list[int],
        batches: queue.Queue,
        stop: threading.Event,
        executor,
        threads: int,
    ) -> None:
        def put(item) -> bool:
            while not stop.is_set():
                try:
                    batches.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        def tokenize(window: tuple[int, int, int, bool]) -> Ragged:
            chunk = texts[window[1] : window[2]]
            return Ragged.from_lists(
                self.tower.tokenize(
                    [prompt + t for t in chunk] if prompt else chunk,
                    executor,
                    threads,
                    STATIC_FIRST_WINDOW if static else None,
                )
            )

        # Static batches leave STATIC_GRANULARITY tokens spare for the fillers that round the sequence count up.
        budget = self.token_budget - STATIC_GRANULARITY if static else self.token_budget
        try:
            windows = _windows(sizes, STATIC_FIRST_WINDOW, STATIC_FIRST_WINDOW) if static else _windows(sizes)
            carried: tuple[Ragged, np.ndarray] | None = None  # a partly filled last batch, for the next window
            # One window is tokenized ahead while the previous one is cut into batches and waits in the
            # (short) batch queue, so the device never waits for a whole window's tokenization.
            with ThreadPoolExecutor(1) as lookahead:
                pending = lookahead.submit(tokenize, windows[0]) if windows else None
                for i, (chunk_index, start, end, closes_chunk) in enumerate(windows):
                    tokens = pending.result()
                    if i + 1 < len(windows):
                        pending = lookahead.submit(tokenize, windows[i + 1])
                    positions = np.arange(start, end, dtype=np.int64)
                    if carried is not None:
                        tokens = Ragged.concat([carried[0], tokens])
                        positions = np.concatenate([carried[1], positions])
                        carried = None
                    plan = plan_batches(
                        tokens.lengths, budget, self.options.max_batch_size, packed=packed, sort=not static
                    )
                    lengths = tokens.lengths
                    if static and plan and not closes_chunk and lengths[plan[-1]].sum() < STATIC_FILL * budget:
                        last = plan.pop()
                        carried = (tokens.take(last), positions[last])
                    for rows in plan:
                        if static and lengths[rows].sum() >= STATIC_FILL * budget:
                            tensors = self.tower.collate_static(tokens, rows, self.token_budget, STATIC_GRANULARITY)
                        else:
                            tensors = self.tower.collate(
                                tokens, rows, [texts[p] for p in positions[rows]], prompt, packed
                            )
                        if self.device.type == "cuda":
                            tensors = {
                                k: v.pin_memory() if isinstance(v, torch.Tensor) else v for k, v in tensors.items()
                            }
                        if not put(_Batch(positions[rows], tensors, int(tensors["input_ids"].numel()))):
                            return
                    if closes_chunk and not put(_ChunkEnd(chunk_index, *_chunk_bounds(sizes, chunk_index))):
                        return
            put(_DONE)
        except BaseException as exc:  # handed to the consumer, which re-raises it
            put(_Failed(exc))

    def _to_device(self, tensors: dict[str, Any]) -> dict[str, Any]:
        non_blocking = self.device.type == "cuda"
        return {
            k: v.to(self.device, non_blocking=non_blocking) if isinstance(v, torch.Tensor) else v
            for k, v in tensors.items()
        }

    def _run(self, batch: _Batch, packed: bool) -> list[tuple[np.ndarray, torch.Tensor]]:
        """(positions, vectors) pieces for one batch; on CUDA out-of-memory the batch is split in halves."""
        if "real" in batch.tensors:
            assert self._runner is not None
            self.batches["static"] += 1
            try:
                return [(batch.positions, self.tower.forward_static(self._to_device(batch.tensors), self._runner))]
            except torch.cuda.OutOfMemoryError:
                torch.cuda.empty_cache()
                batch = _unstatic(batch)  # the eager packed batch it was made from, which can be split
        self.batches["other"] += 1
        if self._oom_cap is not None and batch.tokens > self._oom_cap and len(batch.positions) > 1:
            return [piece for half in _split(batch, packed) for piece in self._run(half, packed)]
        try:
            return [(batch.positions, self.tower.forward(self._to_device(batch.tensors), packed))]
        except torch.cuda.OutOfMemoryError:
            if len(batch.positions) == 1:
                raise
            torch.cuda.empty_cache()
            self._oom_cap = max(1, batch.tokens // 2)
            log.warning(
                "out of GPU memory at %d tokens per batch; splitting batches (set a smaller --token-budget)",
                batch.tokens,
            )
            return [piece for half in _split(batch, packed) for piece in self._run(half, packed)]


def _unstatic(batch: _Batch) -> _Batch:
    """A static batch without its fillers: the plain packed batch of its real sequences."""
    t, real, used = batch.tensors, batch.tensors["real"], batch.tensors["used"]
    cu = t["cu_seq_lens_q"][: real + 1].clone()
    longest = int((cu[1:] - cu[:-1]).max()) if real else 0
    tensors = {
        "input_ids": t["input_ids"][:, :used],
        "position_ids": t["position_ids"][:, :used],
        "cu_seq_lens_q": cu,
        "max_length_q": longest,
    }
    return _Batch(batch.positions, tensors, used)


def _windows(sizes: list[int], first: int = FIRST_WINDOW, whole: int = MAX_WINDOW) -> list[tuple[int, int, int, bool]]:
    """(chunk index, start, end, closes the chunk) of the slices tokenized and length-sorted together.

    A chunk of at most ``whole`` texts is one window; a longer one is cut into windows that start at
    ``first`` texts, so the device starts early, and double up to ``MAX_WINDOW``. The cut depends on the
    chunk alone, never on the chunks before it, so a chunk is batched - and its embeddings computed - the
    same way whichever call encodes it (the embedding cache's resumed runs rely on that). An empty chunk
    gets an empty window so that its end is still reported."""
    windows = []
    start = 0
    for index, size in enumerate(sizes):
        end = start + size
        if size <= whole:
            windows.append((index, start, end, True))
            start = end
            continue
        position, width = start, first
        while position < end:
            stop = min(end, position + width)
            if end - stop < width // 2:  # no sliver at the end of a chunk
                stop = end
            windows.append((index, position, stop, stop == end))
            position = stop
            width = min(2 * width, MAX_WINDOW)
        start = end
    return windows


def _chunk_bounds(sizes: list[int], index: int) -> tuple[int, int]:
    start = sum(sizes[:index])
    return start, start + sizes[index]


def _even_chunks(n: int, size: int) -> list[int]:
    size = max(1, size)
    return [min(size, n - start) for start in range(0, n, size)]


def _drain(q: queue.Queue) -> None:
    while True:
        try:
            q.get_nowait()
        except queue.Empty:
            return


def _split(batch: _Batch, packed: bool) -> list[_Batch]:
    """Two halves of a collated batch (rows for padded, whole sequences for packed)."""
    half = len(batch.positions) // 2
    t = batch.tensors
    if not packed:
        parts = [{k: v[:half] for k, v in t.items()}, {k: v[half:] for k, v in t.items()}]
    else:
        cu = t["cu_seq_lens_q"]
        cut = int(cu[half])
        parts = [
            {
                "input_ids": t["input_ids"][:, :cut],
                "position_ids": t["position_ids"][:, :cut],
                "cu_seq_lens_q": cu[: half + 1].clone(),
                "max_length_q": t["max_length_q"],
            },
            {
                "input_ids": t["input_ids"][:, cut:],
                "position_ids": t["position_ids"][:, cut:],
                "cu_seq_lens_q": (cu[half:] - cut).to(cu.dtype),
                "max_length_q": t["max_length_q"],
            },
        ]
    return [
        _Batch(batch.positions[:half], parts[0], int(parts[0]["input_ids"].numel())),
        _Batch(batch.positions[half:], parts[1], int(parts[1]["input_ids"].numel())),
    ]


# -- several devices ---------------------------------------------------------------------------------
# One process per extra device: a persistent pool of engine workers (spawned, never forked). The calling
# process keeps encoding on its own device; each worker loads the same tower on its device once and then
# serves jobs. Every chunk is dealt out round-robin (so each device gets the same mix of long and short
# texts), the workers write their rows into a shared-memory tensor, and the chunk is complete when every
# device has answered. A worker that fails or dies fails the call with its error instead of hanging it.

_POLL_S = 1.0


def _worker(spec: TowerSpec, options: EngineOptions, device: str, jobs, results) -> None:
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
    """The worker processes of an engine's extra devices (the engine encodes on the first device itself)."""

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
