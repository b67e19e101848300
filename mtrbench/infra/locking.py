"""One run at a time on a shared resource: a lock file that names its holder.

``with held_lock(path, purpose="audit log"):`` creates ``path`` (conventionally ``<file>.lock``, or an embedding
cache entry's ``<entry>/.lock``) holding the holder's pid, host, start time, a random token (so a process
removes only its own lock) and, on Linux, the kernel's start time of the holder process (so a reused pid is not
taken for the holder). It is removed on the way out, whatever ends the block (an error, KeyboardInterrupt). A
second run finds the lock and stops with ``LockHeld`` (an ``MtrbenchError``) naming the holder, or, given
``wait_s``, polls for that long first (``on_wait`` is told once, when the wait begins).

The file is created whole or not at all: written under a temporary name, then hard-linked to ``path``, which
fails when it exists, so a reader never sees a half-written holder. A lock file that cannot be read is never
taken over: the message names it, to be deleted by hand.

A lock file left behind by a run that died (its process no longer exists on this host) is taken over with a
warning. A holder on another host cannot be checked, so it is never taken over: the message says which file to
delete once that run is known to be over.

On POSIX the file is also ``flock``-ed while held (the lock is taken on the temporary file before it is linked),
so two runs that find the same stale file at the same moment cannot both take it over; the kernel drops that
lock when a process dies.

A SIGTERM (``kill``, a job scheduler's stop) would end the process without running ``finally`` blocks and
leave the file behind. While a lock is held by the main thread's process, a SIGTERM handler is installed: it
removes every lock file this process holds, then calls the handler that was there before or, where that was
the default, exits with status 143 (128 + SIGTERM, what a shell reports for a process ended by SIGTERM).
The previous handler is put back when the last lock is released.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import secrets
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from mtrbench.infra.errors import MtrbenchError

try:
    import fcntl
except ImportError:  # Windows: the pid check alone (a narrow race when two runs take over the same stale file)
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

POLL_S = 0.2
SIGTERM_EXIT_STATUS = 128 + signal.SIGTERM
_NO_HARD_LINKS = (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK)


@dataclass(frozen=True)
class LockHolder:
    pid: int
    host: str
    started: str  # ISO 8601, UTC
    purpose: str = ""
    token: str = ""  # random, per acquisition: a process releases only the lock file it created
    proc_start: str | None = None  # /proc/<pid>/stat field 22 (start time in clock ticks), where there is a /proc

    @property
    def name(self) -> str:
        return f"pid {self.pid} on host {self.host}"

    def describe(self) -> str:
        return f"{self.name}, started {self.started}"

    @classmethod
    def me(cls, purpose: str) -> LockHolder:
        return cls(
            os.getpid(),
            socket.gethostname(),
            datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
            purpose,
            secrets.token_hex(8),
            _proc_start(os.getpid()),
        )


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
        proc_start = data.get("proc_start")
        return LockHolder(
            int(data["pid"]),
            str(data["host"]),
            str(data["started"]),
            str(data.get("purpose", "")),
            str(data.get("token", "")),
            None if proc_start is None else str(proc_start),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def is_held(path: str | Path) -> bool:
    """A lock file exists at ``path`` and is not stale (one that cannot be read counts as held)."""
    path = Path(path)
    holder = read_holder(path)
    if holder is None:
        return path.exists()
    return not is_stale(holder)


def pid_alive(pid: int, proc_start: str | None = None) -> bool:
    """Process ``pid`` runs (not a zombie); given ``proc_start``, it is also the process that started then."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        pass
    except OSError:
        return False
    fields = _proc_stat(pid)
    if fields is None:
        return True  # no /proc (or it vanished just now): os.kill is all we can tell
    if fields[0] == "Z":
        return False  # exited, not yet waited for by its parent
    return proc_start is None or len(fields) <= 19 or fields[19] == proc_start


def _proc_stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses); Linux only."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()


def _proc_start(pid: int) -> str | None:
    fields = _proc_stat(pid)
    return fields[19] if fields and len(fields) > 19 else None


def is_stale(holder: LockHolder) -> bool:
    """The holder ran on this host and is gone (or its pid now belongs to another process). A holder
    elsewhere is never judged stale."""
    return holder.host == socket.gethostname() and not pid_alive(holder.pid, holder.proc_start)


def _log_warning(message: str) -> None:
    log.warning(f"warning: {message}")


@contextmanager
def held_lock(
    path: str | Path,
    *,
    purpose: str,
    wait_s: float = 0.0,
    warn: Callable[[str], None] | None = None,
    on_wait: Callable[[LockHolder | None], None] | None = None,
    on_stale: Callable[[LockHolder], None] | None = None,
) -> Iterator[LockHolder]:
    """Hold the lock file ``path`` for the block; yields this process's ``LockHolder``.

    ``purpose`` names what is protected in messages ("audit log"). ``wait_s`` > 0: when held by a live run,
    retry for up to that many seconds before raising ``LockHeld``; ``on_wait`` is called once with the holder
    when that wait begins. ``warn`` receives the stale-lock takeover notice [logged as a
    ``warning: ...`` line, which the command line prints on stderr]; ``on_stale``, when given, is called with the stale holder instead.
    """
    path = Path(path)
    warn = warn or _log_warning
    deadline = time.monotonic() + max(0.0, wait_s)
    announced = False
    while True:
        try:
            fd, me = _acquire(path, purpose, warn, on_stale)
        except LockHeld as held:
            if time.monotonic() >= deadline:
                raise
            if not announced and on_wait is not None:
                on_wait(held.holder)
            announced = True
            time.sleep(min(POLL_S, max(0.01, deadline - time.monotonic())))
            continue
        break
    _HELD.add(path, fd, me)
    try:
        yield me
    finally:
        _HELD.release(me.token)


def _acquire(
    path: Path, purpose: str, warn: Callable[[str], None], on_stale: Callable[[LockHolder], None] | None
) -> tuple[int, LockHolder]:
    """Create the lock file (or take over a stale one); the returned descriptor keeps its ``flock`` until
    ``_release``."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise MtrbenchError(f"cannot create {path.parent} for the {purpose} lock ({err.strerror})") from None
    for _ in range(50):  # only repeats when another run removed or replaced the file under us
        me = LockHolder.me(purpose)
        try:
            fd = _create(path, me)
            if fd is not None:
                return fd, me
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue  # released between our attempt and the open: try again at once
        except OSError as err:
            raise MtrbenchError(f"cannot create the {purpose} lock {path} ({err.strerror or err})") from None
        try:
            locked = _flock(fd)
            if not _still_at(path, fd):
                continue
            if locked is False:  # a live lock of another open file (another process or thread)
                raise _held(path, purpose, read_holder(path))
            holder = read_holder(path)
            if holder is None or not is_stale(holder):
                raise _held(path, purpose, holder)
            if on_stale is not None:
                on_stale(holder)
            else:
                warn(
                    f"{path}: taking over the {purpose} lock of {holder.describe()}, which is no longer running "
                    "(it was interrupted before it could remove its lock)"
                )
            # Under our flock (where there is one) and still the file at ``path``: no other run can be
            # removing it too, or have replaced it with its own. Without flock, the re-read narrows that window.
            if read_holder(path) == holder:
                path.unlink(missing_ok=True)
        finally:
            os.close(fd)
    raise MtrbenchError(f"cannot take the {purpose} lock {path}: it keeps being replaced by other runs")


def _create(path: Path, me: LockHolder) -> int | None:
    """Create ``path`` whole, naming ``me``, flock-ed; its open descriptor, or None when ``path`` exists."""
    data = (json.dumps(asdict(me), sort_keys=True) + "\n").encode("utf-8")
    tmp = path.with_name(f".{path.name.lstrip('.')}.{me.pid}-{me.token}.tmp")
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try:
            _flock(fd)  # a new file: nobody else can hold it
            os.write(fd, data)
            os.fsync(fd)
            os.link(tmp, path)
        except BaseException:
            os.close(fd)
            raise
    except FileExistsError:
        return None
    except OSError as err:
        if err.errno not in _NO_HARD_LINKS:
            raise
        return _create_exclusive(path, data)  # a file system without hard links
    finally:
        tmp.unlink(missing_ok=True)
    return fd


def _create_exclusive(path: Path, data: bytes) -> int | None:
    """Without hard links: create and fill in place (a reader may briefly see it empty: held, not stale)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return None
    _flock(fd)
    os.write(fd, data)
    os.fsync(fd)
    return fd


def _flock(fd: int) -> bool | None:
    """Try to ``flock`` ``fd``: True when locked, False when another open file holds it, None when the
    platform or file system has no flock (the pid check alone then)."""
    if fcntl is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # a file system without flock (some network mounts)
        return None
    return True


def _still_at(path: Path, fd: int) -> bool:
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (mine.st_dev, mine.st_ino)


def _held(path: Path, purpose: str, holder: LockHolder | None) -> LockHeld:
    who = holder.describe() if holder is not None else "another run (its lock file does not say which)"
    return LockHeld(
        f"the {purpose} is in use by {who}; lock file {path}. Wait for that run to finish; if it "
        "is not running any more, delete the lock file",
        path,
        holder,
    )


def _release(path: Path, fd: int, me: LockHolder) -> None:
    try:
        holder = read_holder(path)
        if holder is not None and holder.token == me.token:  # ours: unlink before closing, so nobody can
            path.unlink()  # lock a file that is about to vanish
    except OSError:
        pass
    finally:
        os.close(fd)


class _HeldLocks:
    """The lock files this process holds, so a SIGTERM can remove them; each is released exactly once."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[Path, int, LockHolder]] = {}
        self._guard = threading.RLock()
        self._previous: Callable[[int, object], object] | int | None = None  # SIGTERM's handler before ours
        self._installed = False

    def add(self, path: Path, fd: int, me: LockHolder) -> None:
        with self._guard:
            self._held[me.token] = (path, fd, me)
            if not self._installed:
                self._install()

    def release(self, token: str) -> None:
        with self._guard:
            entry = self._held.pop(token, None)
            if entry is not None:
                _release(*entry)
            if not self._held and self._installed:
                self._uninstall()

    def release_all(self) -> None:
        with self._guard:
            for token in list(self._held):
                self.release(token)

    def _install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may set handlers; the lock then lives as before (removed by finally)
        try:
            if signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
                return  # the process was told to survive SIGTERM: its locks must stay too
            self._previous = signal.signal(signal.SIGTERM, self._on_sigterm)
        except (ValueError, OSError):  # an embedding interpreter that forbids it
            return
        self._installed = True

    def _uninstall(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # put back by the main thread's next release
        previous = self._previous if self._previous is not None else signal.SIG_DFL
        try:
            signal.signal(signal.SIGTERM, previous)
        except (ValueError, OSError):
            pass
        self._installed = False
        self._previous = None

    def _on_sigterm(self, signum: int, frame: object) -> None:
        previous = self._previous
        self.release_all()
        if callable(previous):
            previous(signum, frame)
        else:
            # SystemExit, not os._exit: ``finally`` blocks still run (atomic writes remove their temporary files)
            raise SystemExit(SIGTERM_EXIT_STATUS)


_HELD = _HeldLocks()
