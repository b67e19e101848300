"""Writing a file whole: readers see the old content or the new one, never a part of it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from mtrbench.infra.errors import UserInputError


def _current_umask() -> int:
    # The umask can only be read by setting it; done once, at import, before any thread could race it.
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def _reason(path: Path, exc: OSError) -> str:
    """Why the system refused to create ``path`` (or its folder), in words that name the culprit."""
    reason = exc.strerror or exc.__class__.__name__
    culprit = Path(exc.filename) if isinstance(exc.filename, str) else None
    if isinstance(exc, FileExistsError) and culprit is not None and not culprit.is_dir():
        reason = f"{culprit} is a file, not a folder"
    elif isinstance(exc, NotADirectoryError):
        above = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
        reason = f"{above} is a file, not a folder" if above is not None else reason
    elif (
        culprit is not None
        and culprit not in (path, path.parent)
        and not str(culprit).startswith(str(path.parent / f".{path.name}."))
    ):
        reason = f"{reason}: {culprit}"
    return reason


def _cannot_write(path: Path, exc: OSError) -> UserInputError:
    """One line naming the path the user asked for and why the system refused it."""
    return UserInputError(f"cannot write {path}: {_reason(path, exc)}")


def ensure_folder(folder: str | Path) -> Path:
    """Create ``folder`` (and its parents); one :class:`UserInputError` line naming it when that cannot be
    done (a file of that name or above it, no permission) or it is not writable."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserInputError(f"cannot create the folder {folder}: {_reason(folder, exc)}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserInputError(f"cannot write to {folder}: the folder is not writable")
    return folder


def ensure_parent(path: str | Path) -> Path:
    """Create ``path``'s folder; an output that cannot go there is one :class:`UserInputError` line naming it.
    Commands call it before long work, so a bad ``--output`` fails at once (the writer below checks again)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _cannot_write(path, exc) from None
    if path.is_dir():
        raise UserInputError(f"cannot write {path}: it is a folder")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise UserInputError(f"cannot write {path}: {path.parent} is not writable")
    return path


def check_file_target(path: str | Path) -> Path:
    """Refuse now, creating nothing, an output file that could not be written later: ``path`` is a folder, a file
    stands where a folder above it should be, or the nearest existing folder above it is not writable. Commands call
    it before any paid request or long work (a dry run must leave no folder behind, so nothing is created here)."""
    path = Path(path)
    if path.is_dir():
        raise UserInputError(f"cannot write {path}: it is a folder")
    if path.exists() and not os.access(path, os.W_OK):
        raise UserInputError(f"cannot write {path}: the file is not writable")
    _check_nearest_folder(path, path.parent)
    return path


def check_folder_target(folder: str | Path) -> Path:
    """As :func:`check_file_target` for an output folder: a file of that name, or above it, is refused."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise UserInputError(f"cannot create the folder {folder}: {folder} is a file, not a folder")
    _check_nearest_folder(folder, folder)
    return folder


def _check_nearest_folder(path: Path, start: Path) -> None:
    existing = next((p for p in (start, *start.parents) if p.exists()), None)
    if existing is None:  # a relative path below a working folder that vanished
        return
    if not existing.is_dir():
        raise UserInputError(f"cannot write {path}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UserInputError(f"cannot write {path}: {existing} is not writable")


class LineAppender:
    """A file open for appending whole lines (JSONL logs a rerun resumes from). Each :meth:`write` reaches the file
    entire, or not at all: when the system refuses it (a full disk, a quota) what went out is cut off again, so the
    file never ends in part of a line, and the refusal is one :class:`UserInputError` naming the file. ``fsync``:
    each write is flushed to disk too (a crash of the machine keeps every finished line)."""

    def __init__(self, path: str | Path, *, fsync: bool = False) -> None:
        self.path = Path(path)
        self._fsync = fsync
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        except OSError as exc:
            raise _cannot_write(self.path, exc) from None

    def write(self, text: str) -> None:
        assert self._fd is not None, f"{self.path} is closed"
        data = memoryview(text.encode("utf-8"))
        start = os.lseek(self._fd, 0, os.SEEK_END)
        try:
            while data:
                data = data[os.write(self._fd, data) :]
            if self._fsync:
                os.fsync(self._fd)
        except OSError as exc:
            try:
                os.ftruncate(self._fd, start)
            except OSError:
                pass  # the refusal below still names the file; the next run cuts a torn last line itself
            raise _cannot_write(self.path, exc) from None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> LineAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def atomic_write_bytes(path: str | Path, data: bytes, *, fsync: bool = False) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``. ``fsync``: flush the
    data to disk before the rename, so a crash of the machine (not only of the process) leaves the old content
    or the new one. A folder or file that cannot be created or written (no such place, a file where a folder
    should be, no permission, a full disk) is one :class:`UserInputError` naming ``path``."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise _cannot_write(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; what we write is meant to be shared like any file
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _cannot_write(path, exc) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))
