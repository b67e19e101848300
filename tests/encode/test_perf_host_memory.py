"""The CPU engine hands each batch's freed activations back to the system (peak RSS, issue 42 section 4)."""

from __future__ import annotations

import ctypes
import platform
import sys

import pytest

import mtrbench.encode.engine as engine_module
from mtrbench.encode.engine import EncodingEngine, EngineOptions
from mtrbench.encode.host_memory import release_freed_memory

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
TEXTS = [f"passage {i} about rivers, bridges and the towns along them " * (1 + i % 5) for i in range(24)]


def _resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20


@pytest.mark.skipif(not GLIBC, reason="malloc_trim is glibc's")
def test_freed_heap_pages_go_back_to_the_system():
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    block = 96 * 1024  # under glibc's initial 128 KiB mmap threshold: these come from the heap
    blocks = [libc.malloc(block) for _ in range(512)]  # 48 MiB
    for address in blocks:
        ctypes.memset(address, 1, block)  # resident
    for address in blocks[:-1]:  # the last one pins the heap's top, so free() alone gives nothing back
        libc.free(address)
    held = _resident_mib()
    assert release_freed_memory() is True
    released = held - _resident_mib()
    libc.free(blocks[-1])
    assert released > 24, f"only {released:.1f} MiB of ~48 MiB freed on the heap went back"


def test_cpu_engine_releases_memory_after_every_batch(minilm, monkeypatch):
    calls = []
    monkeypatch.setattr(engine_module, "release_freed_memory", lambda: calls.append(1) or True)
    engine = EncodingEngine(minilm.doc_engine.tower, EngineOptions(token_budget=128))  # several batches
    assert engine.device.type == "cpu"
    vectors = engine.encode(TEXTS)
    assert vectors.shape[0] == len(TEXTS)
    batches = engine.batches["static"] + engine.batches["other"]
    assert batches > 3
    assert len(calls) == batches  # once per batch: once per encode() leaves the peak where it was
