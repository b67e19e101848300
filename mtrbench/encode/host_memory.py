"""Handing the memory a CPU forward pass freed back to the operating system.

A padded batch's attention scores and feed-forward states are tens of MiB each. glibc's malloc raises its
mmap threshold after the first such block is freed, so the following ones come from the heap, and what they
leave free in the middle of it stays part of the process: the resident size climbs batch after batch
(measured on all-MiniLM-L6-v2 over the sample task: peak RSS 964 MiB, 829 MiB when trimmed after every
batch, for about 1.5 s more CPU time in 60 s, the page faults of the next batch; benchmarks/README.md).
``malloc_trim`` returns those free pages; it changes no value computed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache


@cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None where there is none (macOS, Windows, musl)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_freed_memory() -> bool:
    """Return the heap's free pages to the operating system; False where the C library cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
