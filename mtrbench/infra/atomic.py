"""Writing a file whole: readers see the old content or the new one, never a part of it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _current_umask() -> int:
    # The umask can only be read by setting it; done once, at import, before any thread could race it.
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def atomic_write_bytes(path: str | Path, data: bytes, *, fsync: bool = False) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``. ``fsync``: flush the
    data to disk before the rename, so a crash of the machine (not only of the process) leaves the old content
    or the new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; what we write is meant to be shared like any file
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))
