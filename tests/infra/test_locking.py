"""mtrbench.infra.locking: one holder at a time, a named holder in the error, stale locks taken over, always released."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mtrbench.infra.errors import MtrbenchError
from mtrbench.infra.locking import LockHeld, LockHolder, held_lock, lock_path_for, read_holder

ROOT = Path(__file__).resolve().parents[2]


class Holder:
    """A second process that holds ``path`` with ``held_lock`` until told to let go (``release``)."""

    def __init__(self, path: Path) -> None:
        code = textwrap.dedent(f"""
            import sys
            from mtrbench.infra.locking import held_lock
            with held_lock({str(path)!r}, purpose="test file"):
                print("held", flush=True)
                sys.stdin.readline()
        """)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        assert self.proc.stdout.readline().strip() == "held"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def release(self) -> None:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        assert self.proc.wait(30) == 0


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid  # reaped: no process has this pid until the kernel wraps around


def write_lock(path: Path, pid: int, host: str | None = None) -> None:
    path.write_text(
        json.dumps(
            {
                "pid": pid,
                "host": host or socket.gethostname(),
                "started": "2026-01-01T00:00:00Z",
                "purpose": "test file",
            }
        )
    )


def test_second_holder_is_refused_with_the_holder_named_then_gets_it_after_release(tmp_path):
    path = tmp_path / "data.jsonl.lock"
    other = Holder(path)
    try:
        holder = read_holder(path)
        assert holder is not None and holder.pid == other.pid and holder.host == socket.gethostname()
        with pytest.raises(LockHeld) as info:
            with held_lock(path, purpose="test file"):
                pytest.fail("entered a held lock")
        message = str(info.value)
        assert f"pid {other.pid} on host {socket.gethostname()}" in message and str(path) in message
        assert "\n" not in message and isinstance(info.value, MtrbenchError)
        assert info.value.holder == holder
    finally:
        other.release()
    assert not path.exists()  # the other process removed its lock on the way out
    with held_lock(path, purpose="test file") as me:
        assert read_holder(path) == me and me.pid == os.getpid()
    assert not path.exists()


def test_a_file_naming_a_live_process_is_respected_even_without_flock(tmp_path):
    path = tmp_path / "x.lock"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        write_lock(path, sleeper.pid)
        with pytest.raises(LockHeld, match=f"pid {sleeper.pid} "):
            with held_lock(path, purpose="test file"):
                pass
        assert read_holder(path).pid == sleeper.pid  # untouched
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_holder_on_another_host_is_never_taken_over(tmp_path):
    path = tmp_path / "x.lock"
    write_lock(path, dead_pid(), host="some-other-host.invalid")
    with pytest.raises(LockHeld, match="on host some-other-host.invalid"):
        with held_lock(path, purpose="test file"):
            pass


def test_a_stale_lock_is_taken_over_with_a_warning(tmp_path):
    path = tmp_path / "x.lock"
    gone = dead_pid()
    write_lock(path, gone)
    warnings: list[str] = []
    with held_lock(path, purpose="test file", warn=warnings.append) as me:
        assert read_holder(path) == me
    assert len(warnings) == 1 and f"pid {gone} " in warnings[0] and "no longer running" in warnings[0]
    assert not path.exists()


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_released_when_the_block_raises(tmp_path, error):
    path = tmp_path / "x.lock"
    with pytest.raises(error):
        with held_lock(path, purpose="test file"):
            assert path.exists()
            raise error()
    assert not path.exists()
    with held_lock(path, purpose="test file"):  # free again
        pass


def test_bounded_wait_gets_the_lock_when_the_holder_finishes_and_gives_up_otherwise(tmp_path):
    path = tmp_path / "x.lock"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.0)"])
    write_lock(path, sleeper.pid)
    # the sleeper never removes its (flock-less) file: once it exits, the file is stale and taken over
    with held_lock(path, purpose="test file", wait_s=20, warn=lambda m: None) as me:
        assert read_holder(path) == me
    sleeper.wait()
    other = Holder(path)
    try:
        with pytest.raises(LockHeld):
            with held_lock(path, purpose="test file", wait_s=0.5):
                pass
    finally:
        other.release()


def test_lock_path_and_holder_text(tmp_path):
    assert lock_path_for(tmp_path / "log.jsonl") == tmp_path / "log.jsonl.lock"
    holder = LockHolder(12, "h", "2026-01-01T00:00:00Z", "audit log")
    assert holder.describe() == "pid 12 on host h, started 2026-01-01T00:00:00Z"
    (tmp_path / "junk.lock").write_text("not json")
    assert read_holder(tmp_path / "junk.lock") is None and read_holder(tmp_path / "absent.lock") is None
