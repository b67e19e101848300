from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Corpus embeddings the tests encode are cached in a fresh folder per session, never in the user's home.
os.environ.setdefault("MTRBENCH_CACHE_DIR", tempfile.mkdtemp(prefix="mtrbench-test-cache-"))

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
# The published-format files the tests read (invented fixtures and small real files, each with its license)
# live in the repository, so a bare clone runs every loader test. MTRBENCH_SHARED points elsewhere.
SHARED = Path(os.environ.get("MTRBENCH_SHARED", DATA / "shared"))
# Optional data that is not redistributed with the code: tests needing it skip with this prefix, counted at the end.
OPTIONAL_DATA = "optional data missing:"


@pytest.fixture(scope="session")
def shared() -> Path:
    if not (SHARED / "datasets").is_dir():
        pytest.fail(f"test data folder {SHARED / 'datasets'} not present (it ships in tests/data/shared; "
                    "MTRBENCH_SHARED must point at a folder holding datasets/)")
    return SHARED


@pytest.fixture(scope="session")
def seed_papers() -> Path:
    """The seed papers' text (../shared/seeds on this project's machines, or MTRBENCH_SEEDS)."""
    for folder in (os.environ.get("MTRBENCH_SEEDS"), ROOT.parent / "shared" / "seeds"):
        if folder and Path(folder).is_dir():
            return Path(folder)
    pytest.skip(f"{OPTIONAL_DATA} the seed papers' text (../shared/seeds next to the clone, or set MTRBENCH_SEEDS)")


def pytest_terminal_summary(terminalreporter) -> None:
    skipped = terminalreporter.stats.get("skipped", [])
    reasons = [str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
               for report in skipped]
    optional = sum(OPTIONAL_DATA in reason for reason in reasons)
    if skipped:
        terminalreporter.write_line(f"skips: {optional} for missing optional data, {len(skipped) - optional} "
                                    "for other reasons (each reason above)")


@pytest.fixture(scope="session")
def sample_cli_results(tmp_path_factory) -> Path:
    """`mtrbench eval --history current,full` (MiniLM on the embedded sample) run once per test session and
    shared by the tests that compare against the CLI: it is the suite's most expensive setup on CPU."""
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("sample-cli") / "results"
    proc = subprocess.run([sys.executable, "-m", "mtrbench.cli", "eval", "--history", "current,full", "--device", "cpu",
                           "--output-dir", str(out), "--quiet"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="session")
def native_mini() -> Path:
    return DATA / "native-mini"


@pytest.fixture(scope="session")
def minilm():
    """The offline MiniLM model, loaded once for the whole session."""
    from mtrbench.retrieve import build_retriever

    return build_retriever("minilm", device="cpu", show_progress=False)
