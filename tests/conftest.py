from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from suite_schedule import heaviest_files_first

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # `pytest -n N`: N workers share the cores, so each (and the CLI processes it starts) computes on one thread
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")
# Corpus embeddings the tests encode are cached in a fresh folder per session, never in the user's home.
os.environ.setdefault("MTRBENCH_CACHE_DIR", tempfile.mkdtemp(prefix="mtrbench-test-cache-"))

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
# The published-format files the tests read (invented fixtures and small real files, each with its license)
# live in the repository, so a bare clone runs every loader test. MTRBENCH_SHARED may name another copy: it is
# used when it holds datasets/; a folder without it (an empty or unrelated one) leaves the in-repo copy in use,
# said once in the summary.
IN_REPO_SHARED = DATA / "shared"
_ASKED_SHARED = os.environ.get("MTRBENCH_SHARED")
SHARED = Path(_ASKED_SHARED) if _ASKED_SHARED and (Path(_ASKED_SHARED) / "datasets").is_dir() else IN_REPO_SHARED
# Optional data that is not redistributed with the code: tests needing it skip with this prefix, counted at the end.
OPTIONAL_DATA = "optional data missing:"


@pytest.fixture(scope="session", autouse=True)
def reports_on_stdout() -> None:
    """Library reports (dry runs, cost estimates) on stdout, as the command line shows them."""
    from mtrbench.infra.reporting import show_reports

    show_reports()


@pytest.fixture(scope="session")
def shared() -> Path:
    if not (SHARED / "datasets").is_dir():
        pytest.fail(
            f"test data folder {SHARED / 'datasets'} not present (it ships in tests/data/shared: a checkout "
            "without it is incomplete)"
        )
    return SHARED


@pytest.fixture(scope="session")
def seed_papers() -> Path:
    """The seed papers' text (../shared/seeds on this project's machines, or MTRBENCH_SEEDS)."""
    for folder in (os.environ.get("MTRBENCH_SEEDS"), ROOT.parent / "shared" / "seeds"):
        if folder and Path(folder).is_dir():
            return Path(folder)
    pytest.skip(f"{OPTIONAL_DATA} the seed papers' text (../shared/seeds next to the clone, or set MTRBENCH_SEEDS)")


def pytest_configure(config) -> None:
    if config.getoption("dist", "no") in ("loadfile", "loadscope"):
        config.option.loadscopereorder = False  # keep the collection order: heaviest files first (suite_schedule)


def pytest_collection_modifyitems(config, items) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        heaviest_files_first(items)


def pytest_terminal_summary(terminalreporter) -> None:
    skipped = terminalreporter.stats.get("skipped", [])
    reasons = [
        str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr) for report in skipped
    ]
    optional = sum(OPTIONAL_DATA in reason for reason in reasons)
    if _ASKED_SHARED and SHARED == IN_REPO_SHARED:
        terminalreporter.write_line(
            f"MTRBENCH_SHARED={_ASKED_SHARED} holds no datasets/ folder: the tests read the in-repo {IN_REPO_SHARED}"
        )
    if skipped:
        terminalreporter.write_line(
            f"skips: {optional} for missing optional data, {len(skipped) - optional} "
            "for other reasons (each reason above)"
        )


@pytest.fixture(scope="session")
def sample_cli_results(tmp_path_factory) -> Path:
    """`mtrbench eval --history current,full` (MiniLM on the embedded sample) run once per test run and shared by
    the tests that compare against the CLI: it is the suite's most expensive setup on CPU. Under `pytest -n N`
    the first worker to need it runs it in-process (under a file lock) and the others read its finished folder."""
    import fcntl

    from cli_run import run_cli

    shared_root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared_root = shared_root.parent  # the run's folder, common to every worker
    folder = shared_root / "sample-cli"
    folder.mkdir(exist_ok=True)
    out, done = folder / "results", folder / "done"
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            proc = run_cli("eval", "--history", "current,full", "--device", "cpu", "--output-dir", str(out), "--quiet")
            assert proc.returncode == 0, proc.stderr
            done.write_text("ok\n")
    return out


@pytest.fixture(scope="session")
def native_mini() -> Path:
    return DATA / "native-mini"


@pytest.fixture(scope="session")
def minilm():
    """The offline MiniLM model, loaded once for the whole session."""
    from mtrbench.retrieve import build_retriever

    return build_retriever("minilm", device="cpu", show_progress=False)


@pytest.fixture(scope="session")
def sample_bm25_histories(tmp_path_factory) -> Path:
    """`mtrbench eval --model bm25 --history all` on the embedded sample (six results with their run and per-query
    files, about 10 s on a CPU), shared by the tie-aware ranks and the explorer tests."""
    from mtrbench.cli import main

    folder = tmp_path_factory.mktemp("bm25-histories")
    assert main(["eval", "--model", "bm25", "--history", "all", "--quiet", "--output-dir", str(folder)]) == 0
    return folder
