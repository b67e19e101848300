"""One run at a time on a shared file: a lock file beside it that names its holder.

``with held_lock(path, purpose="audit log"):`` creates ``path`` (conventionally ``<file>.lock``) holding the
holder's pid, host and start time, and removes it on the way out, whatever ends the block (an error,
KeyboardInterrupt). A second run finds the lock and stops with an ``MtrbenchError`` naming the holder, or,
given ``wait_s``, polls for that long first.

A lock file left behind by a run that died (its pid no longer exists on this host) is taken over with a
warning. A holder on another host cannot be checked, so it is never taken over: the message says which
file to delete once that run is known to be over.

On POSIX the file is also ``flock``-ed while held, so two runs that find the same stale file at the same
moment cannot both take it over; the kernel drops that lock when a process dies.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from mtrbench.errors import MtrbenchError

try:
    import fcntl
except ImportError:  # Windows: the pid check alone (a narrow race when two runs start at the same instant)
    fcntl = None  # type: ignore[assignment]

POLL_S = 0.2


@dataclass(frozen=True)
class LockHolder:
    pid: int
    host: str
    started: str  # ISO 8601, UTC
    purpose: str = ""

    def describe(self) -> str:
        return f"pid {self.pid} on host {self.host}, started {self.started}"

    @classmethod
    def me(cls, purpose: str) -> "LockHolder":
        return cls(os.getpid(), socket.gethostname(),
                   datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"), purpose)


class LockHeld(MtrbenchError):
    """Another run holds the lock (``holder`` is None when the lock file cannot be read)."""

    def __init__(self, message: str, path: Path, holder: LockHolder | None) -> None:
        super().__init__(message)
        self.path = path
        self.holder = holder


def lock_path_for(path: str | Path) -> Path:
    """The conventional lock file of ``path``: ``<path>.lock`` beside it."""
    path = Path(path)
    return path.with_name(path.name + ".lock")


def read_holder(path: str | Path) -> LockHolder | None:
    """Who a lock file names; None when it is absent, empty or not a lock file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return LockHolder(int(data["pid"]), str(data["host"]), str(data["started"]), str(data.get("purpose", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return False
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """Exited but not yet waited for by its parent (Linux; elsewhere assumed not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def is_stale(holder: LockHolder) -> bool:
    """The holder ran on this host and is gone. A holder elsewhere is never judged stale."""
    return holder.host == socket.gethostname() and not pid_alive(holder.pid)


def _warn_stderr(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


@contextmanager
def held_lock(path: str | Path, *, purpose: str, wait_s: float = 0.0,
              warn: Callable[[str], None] | None = None) -> Iterator[LockHolder]:
    """Hold the lock file ``path`` for the block; yields this process's ``LockHolder``.

    ``purpose`` names what is protected in messages ("audit log"). ``wait_s`` > 0: when held by a live run,
    retry for up to that many seconds before giving up. ``warn`` receives the stale-lock takeover notice
    [printed to stderr as ``warning: ...``].
    """
    path = Path(path)
    warn = warn or _warn_stderr
    deadline = time.monotonic() + max(0.0, wait_s)
    while True:
        try:
            fd, me = _acquire(path, purpose, warn)
        except LockHeld:
            if time.monotonic() >= deadline:
                raise
            time.sleep(POLL_S)
            continue
        break
    try:
        yield me
    finally:
        _release(path, fd)


def _acquire(path: Path, purpose: str, warn: Callable[[str], None]) -> tuple[int, LockHolder]:
    """Open, lock and fill the lock file; the open descriptor keeps the ``flock`` until ``_release``."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise MtrbenchError(f"cannot create {path.parent} for the {purpose} lock ({err.strerror})") from None
    for _ in range(20):  # only repeats when another run removed or replaced the file under us
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise MtrbenchError(f"cannot create the {purpose} lock {path} ({err.strerror})") from None
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise _held(path, purpose, read_holder(path)) from None
                except OSError:  # a file system without flock (some network mounts): the pid check alone
                    pass
                if not _still_at(path, fd):  # the previous holder deleted this file just before we locked it
                    os.close(fd)
                    continue
            holder = read_holder(path)
            if holder is not None and not _ours(holder):
                if not is_stale(holder):
                    raise _held(path, purpose, holder)
                warn(f"{path}: taking over the {purpose} lock of {holder.describe()}, which is no longer running "
                     "(it was interrupted before it could remove its lock)")
            me = LockHolder.me(purpose)
            _write_holder(fd, me)
            return fd, me
        except BaseException:
            try:
                os.close(fd)
            except OSError:
                pass
            raise
    raise MtrbenchError(f"cannot take the {purpose} lock {path}: it keeps being replaced by other runs")


def _ours(holder: LockHolder) -> bool:
    # A file naming this very process is left from an earlier block that could not remove it; with flock
    # held by us it cannot belong to a live block of another process.
    return fcntl is not None and holder.pid == os.getpid() and holder.host == socket.gethostname()


def _still_at(path: Path, fd: int) -> bool:
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (mine.st_dev, mine.st_ino)


def _write_holder(fd: int, holder: LockHolder) -> None:
    data = (json.dumps(asdict(holder), sort_keys=True) + "\n").encode("utf-8")
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, data)
    os.fsync(fd)


def _held(path: Path, purpose: str, holder: LockHolder | None) -> LockHeld:
    who = holder.describe() if holder is not None else "another run (its lock file does not say which)"
    return LockHeld(f"the {purpose} is in use by {who}; lock file {path}. Wait for that run to finish; if it "
                    "is not running any more, delete the lock file", path, holder)


def _release(path: Path, fd: int) -> None:
    try:
        if _still_at(path, fd):  # unlink before closing: nobody can lock a file that is about to vanish
            path.unlink()
    except OSError:
        pass
    finally:
        os.close(fd)
