"""The `mtrbench` command (or a benchmark script's ``main``) run inside the test process, its output captured.

A subprocess pays torch's and sentence-transformers' imports (about 12 s on 2 CPU cores) before doing anything,
so end-to-end tests call the entry point in-process; tests about processes themselves (kills, resumes,
signals, thread counts, import latency, the installed console script) still start one.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass

from mtrbench.cli import main


@dataclass(frozen=True)
class CliRun:
    """What a finished command left: the fields of ``subprocess.CompletedProcess`` the tests read."""

    returncode: int
    stdout: str
    stderr: str


def captured(entry: Callable[[list[str]], int], args: list[str]) -> CliRun:
    """``entry(args)`` with stdout and stderr captured; a ``SystemExit`` (argparse's usage errors, a refusal
    with a message) becomes the exit status a process would have had."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        try:
            code = entry(args)
        except SystemExit as exc:
            if isinstance(exc.code, str):
                stderr.write(exc.code + "\n")
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    return CliRun(code, stdout.getvalue(), stderr.getvalue())


def run_cli(*args: str) -> CliRun:
    return captured(main, [str(a) for a in args])
