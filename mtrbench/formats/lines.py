"""The lines of a text file, and how an error message names one of them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from mtrbench.errors import MtrbenchError

# The index of a line (from 0) -> where it is, as an error message starts: "runs/a.trec:12".
Locate = Callable[[int], str]


def at_line(path: str | Path) -> Locate:
    """``path:N``, lines counted from 1 as editors do."""
    return lambda index: f"{path}:{index + 1}"


def at_record(path: str | Path) -> Locate:
    """``path record N``, counted from 0: the numbering of lines read as records through ``datasets``,
    which loaders use in all their messages."""
    return lambda index: f"{path} record {index}"


def read_lines(path: str | Path, kind: str) -> Iterator[str]:
    """The lines of a UTF-8 file; ``kind`` ("run", "qrels") names it when it does not exist."""
    path = Path(path)
    if not path.is_file():
        raise MtrbenchError(f"{kind} file {path} does not exist")
    return _lines(path)


def _lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as handle:
        try:
            yield from handle
        except UnicodeDecodeError as exc:
            raise MtrbenchError(f"{path}: not UTF-8 text ({exc.reason})") from None
