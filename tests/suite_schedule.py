"""The order in which `pytest -n N --dist loadfile` hands out test files: the heaviest first.

A file runs whole on one worker, and files are handed out in collection order. pytest-xdist's own order (files
with the most tests first) left the few-test heavy files (Ray clusters, benchmark smoke runs, the real small LLM)
for last, one worker running them alone while the other waited. Handed out first, the many quick files fill in
behind them and the workers finish together.
"""

from __future__ import annotations

from collections import Counter

import pytest

# The test files that take longest on 2 CPU cores, heaviest first, from `--durations=0`. A file renamed or no
# longer slow only costs balance, never a result (tests/project/test_suite_schedule.py checks that each exists).
HEAVIEST_FILES = (
    "tests/leaderboard/test_leaderboard.py",  # first: it makes the shared MiniLM sample eval the others then read
    "tests/project/test_benchmark_smoke.py",
    "tests/encode/test_ray_scale.py",
    "tests/encode/test_cache_resume.py",
    "tests/encode/test_static_batches.py",
    "tests/pipeline/test_api.py",
    "tests/retrieve/test_fuse.py",
    "tests/cli/test_terminal_output.py",
    "tests/llm/test_real_llm.py",
    "tests/encode/test_embedding_cache.py",
    "tests/interop/test_beir_hub_export.py",
    "tests/assess/test_assess.py",
    "tests/cli/test_multirun.py",
    "tests/project/test_golden_outputs.py",
    "tests/encode/test_encode_engine.py",
    "tests/judge/test_nuggets_real_llm.py",
)


def heaviest_files_first(items: list[pytest.Item]) -> None:
    """HEAVIEST_FILES first, then the other files as pytest-xdist orders them (most tests first); each file's
    tests keep their order. Sorts in place, the same on every worker (they must collect the same order)."""
    rank = {path: place for place, path in enumerate(HEAVIEST_FILES)}
    tests_in = Counter(file_of(item) for item in items)
    items.sort(key=lambda item: (rank.get(file_of(item), len(rank)), -tests_in[file_of(item)]))  # stable


def file_of(item: pytest.Item) -> str:
    return item.nodeid.split("::")[0]
