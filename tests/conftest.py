from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Corpus embeddings the tests encode are cached in a fresh folder per session, never in the user's home.
os.environ.setdefault("MTRBENCH_CACHE_DIR", tempfile.mkdtemp(prefix="mtrbench-test-cache-"))

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MTRBENCH_SHARED", ROOT.parent / "shared"))
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def shared() -> Path:
    if not SHARED.is_dir():
        message = f"shared data folder {SHARED} not present (set MTRBENCH_SHARED)"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI must exercise the real formats, never skip them silently
        pytest.skip(message)
    return SHARED


@pytest.fixture(scope="session")
def native_mini() -> Path:
    return DATA / "native-mini"


@pytest.fixture(scope="session")
def minilm():
    """The offline MiniLM model, loaded once for the whole session."""
    from mtrbench.retrieve import build_retriever

    return build_retriever("minilm", device="cpu", show_progress=False)
