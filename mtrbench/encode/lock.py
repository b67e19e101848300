"""One writer per embedding cache entry: a lock file ``<entry>/.lock`` naming its holder.

The file is created whole or not at all (written under a temporary name, then hard-linked to
``.lock``, which fails when it exists), so a reader never sees a half-written holder. It holds the
holder's pid, host name, start time, a random token (so a process releases only its own lock) and,
on Linux, the kernel's start time of the holder process (so a reused pid is not taken for the holder).

A lock whose holder is on this host and no longer running is stale and taken over with a warning. A
holder on another host cannot be checked from here and is always respected: its run either finishes
or someone removes the file by hand (the error message names it).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from mtrbench.errors import MtrbenchError

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
POLL_S = 1.0


@dataclass(frozen=True)
class LockHolder:
    pid: int
    host: str
    started: str
    token: str
    proc_start: str | None = None  # /proc/<pid>/stat field 22, where there is a /proc

    @classmethod
    def me(cls) -> LockHolder:
        return cls(pid=os.getpid(), host=socket.gethostname(),
                   started=datetime.now(timezone.utc).isoformat(timespec="seconds"), token=secrets.token_hex(8),
                   proc_start=_proc_start(os.getpid()))

    def describe(self) -> str:
        return f"pid {self.pid} on host {self.host} (since {self.started})"

    def is_stale(self) -> bool:
        """The holder ran on this host and is gone (or its pid now belongs to another process)."""
        return self.host == socket.gethostname() and not _running(self.pid, self.proc_start)


class EntryLock:
    """``acquire`` waits up to ``wait_s`` for a live holder, then raises MtrbenchError naming it."""

    def __init__(self, folder: Path, label: str) -> None:
        self.folder = folder
        self.path = folder / LOCK_FILE
        self.label = label  # how messages name the entry
        self.mine: LockHolder | None = None

    def holder(self) -> LockHolder | None:
        """Who holds the lock now; None when nobody does. An unreadable lock file is reported as a holder
        that cannot be checked (pid 0), so it is never taken over silently."""
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError:
            raw = ""
        try:
            data = json.loads(raw)
            return LockHolder(pid=int(data["pid"]), host=str(data["host"]), started=str(data["started"]),
                              token=str(data["token"]), proc_start=data.get("proc_start"))
        except (ValueError, KeyError, TypeError):
            return LockHolder(pid=0, host="? (unreadable lock file)", started="?", token="")

    def acquire(self, wait_s: float, say: Callable[[str], None] | None = None) -> float:
        """Take the lock; returns the seconds spent waiting for another holder."""
        say = say or log.warning
        began = time.monotonic()
        announced = False
        while True:
            if self._try_create():
                return time.monotonic() - began
            holder = self.holder()
            if holder is None:
                continue  # released between our attempt and the read: try again at once
            if holder.pid and holder.is_stale():
                if self._remove_if_unchanged(holder):
                    say(f"embedding cache {self.label}: taking over the lock of {holder.describe()}, "
                        f"which is no longer running")
                continue
            waited = time.monotonic() - began
            if waited >= wait_s:
                raise MtrbenchError(
                    f"embedding cache entry {self.label} is being written by {holder.describe()}"
                    + (f"; waited {waited:.0f} s" if wait_s > 0 else "")
                    + f". Let that run finish (set MTRBENCH_CACHE_LOCK_WAIT=SECONDS to wait longer), use another "
                      f"--cache-dir or --no-cache, or delete {self.path} if that process is gone")
            if not announced:
                say(f"embedding cache {self.label} is being written by {holder.describe()}; "
                    f"waiting up to {wait_s:.0f} s for it (MTRBENCH_CACHE_LOCK_WAIT)")
                announced = True
            time.sleep(min(POLL_S, max(0.05, wait_s - waited)))

    def release(self) -> None:
        if self.mine is None:
            return
        current = self.holder()
        if current is not None and current.token == self.mine.token:
            self.path.unlink(missing_ok=True)
        self.mine = None

    def _try_create(self) -> bool:
        holder = LockHolder.me()
        data = json.dumps(asdict(holder), sort_keys=True).encode()
        tmp = self.folder / f".lock-{holder.pid}-{holder.token}.tmp"
        tmp.write_bytes(data)
        try:
            os.link(tmp, self.path)
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            if not self._create_exclusive(data):  # a file system without hard links
                return False
        finally:
            tmp.unlink(missing_ok=True)
        self.mine = holder
        return True

    def _create_exclusive(self, data: bytes) -> bool:
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return True

    def _remove_if_unchanged(self, stale: LockHolder) -> bool:
        """Delete the lock if it still names ``stale``. Serialized between processes of this host (the only
        ones that judge staleness), so two of them cannot both judge the same lock stale and one of them
        then delete the lock the other has just taken."""
        with _host_mutex(self.folder):
            current = self.holder()
            if current != stale:
                return False
            self.path.unlink(missing_ok=True)
            return True


@contextmanager
def _host_mutex(folder: Path):
    try:
        import fcntl
    except ImportError:  # no flock: the window it closes is a few microseconds wide
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the flock


def _proc_stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2:].split()


def _proc_start(pid: int) -> str | None:
    fields = _proc_stat(pid)
    return fields[19] if fields and len(fields) > 19 else None


def _running(pid: int, proc_start: str | None) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    fields = _proc_stat(pid)
    if fields is None:
        return True  # no /proc: os.kill is all we can tell
    if fields[0] == "Z":
        return False  # exited, not yet reaped by its parent
    return proc_start is None or len(fields) <= 19 or fields[19] == proc_start
