"""A SIGTERM while a lock is held removes the lock file and ends the process with status 143.

The child takes two locks (an audit log's and a cache entry's) and waits; the test sends SIGTERM and checks
both files are gone and the exit status is 128 + 15. Without the handler the default action kills the child
(returncode -15) and both files stay behind, which is the bug this guards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from mtrbench.infra.locking import held_lock

ROOT = Path(__file__).resolve().parents[2]


def start_holder(code: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout.readline().strip() == "held", proc.stderr.read()
    return proc


def test_sigterm_removes_every_held_lock_and_exits_143(tmp_path):
    first, second = tmp_path / "log.jsonl.lock", tmp_path / "entry" / ".lock"
    proc = start_holder(f"""
        import sys
        from mtrbench.infra.locking import held_lock
        with held_lock({str(first)!r}, purpose="log"), held_lock({str(second)!r}, purpose="cache entry"):
            print("held", flush=True)
            sys.stdin.readline()
    """)
    assert first.exists() and second.exists()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 143
    assert not first.exists() and not second.exists()


def test_sigterm_runs_the_handler_that_was_there_before(tmp_path):
    lock = tmp_path / "log.jsonl.lock"
    proc = start_holder(f"""
        import signal, sys, time
        from mtrbench.infra.locking import held_lock
        def own(signum, frame):
            print("own handler", flush=True)
            raise SystemExit(7)
        signal.signal(signal.SIGTERM, own)
        with held_lock({str(lock)!r}, purpose="log"):
            print("held", flush=True)
            sys.stdin.readline()
    """)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 7
    assert proc.stdout.read().strip() == "own handler"
    assert not lock.exists()


def test_handler_is_put_back_after_the_last_lock(tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    with held_lock(tmp_path / "a.lock", purpose="a"):
        with held_lock(tmp_path / "b.lock", purpose="b"):
            assert signal.getsignal(signal.SIGTERM) is not before
        assert signal.getsignal(signal.SIGTERM) is not before  # "a" is still held
    assert signal.getsignal(signal.SIGTERM) is before
    assert not (tmp_path / "a.lock").exists() and not (tmp_path / "b.lock").exists()
