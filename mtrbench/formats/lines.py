"""The lines of a text file, and how an error message names one of them.

Text files are UTF-8; a leading byte order mark is dropped and gzip-compressed files are read as
their content (``datasets`` does the same for the files loaders read through it). Bytes that are not
UTF-8 are an error naming the file and line.
"""

from __future__ import annotations

import codecs
import gzip
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from mtrbench.infra.errors import DataError

# The index of a line (from 0) -> where it is, as an error message starts: "runs/a.trec:12".
Locate = Callable[[int], str]

_GZIP_MAGIC = b"\x1f\x8b"
# Archives and compressions other than gzip that datasets opens by file extension; we leave them to it.
_OTHER_CONTAINERS = (b"PK\x03\x04", b"BZh", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd", b"\x04\x22\x4d\x18")
_BOM = "\ufeff"


def at_line(path: str | Path) -> Locate:
    """``path:N``, lines counted from 1 as editors do."""
    return lambda index: f"{path}:{index + 1}"


def at_record(path: str | Path) -> Locate:
    """``path record N``, counted from 0: the numbering of lines read as records through ``datasets``,
    which loaders use in all their messages."""
    return lambda index: f"{path} record {index}"


def read_lines(path: str | Path, kind: str) -> Iterator[str]:
    """The lines of a UTF-8 (optionally gzip-compressed) file; ``kind`` ("run", "qrels") names it when it
    does not exist."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{kind} file {path} does not exist")
    return _lines(path)


def is_gzip(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(2) == _GZIP_MAGIC


def is_other_container(path: Path) -> bool:
    """A zip, bz2, xz, zstd or lz4 file, which only ``datasets`` reads (by extension)."""
    with path.open("rb") as handle:
        return handle.read(6).startswith(_OTHER_CONTAINERS)


def _open_binary(path: Path) -> IO[bytes]:
    return gzip.open(path, "rb") if is_gzip(path) else path.open("rb")  # type: ignore[return-value]


def _lines(path: Path) -> Iterator[str]:
    with _open_binary(path) as handle:
        try:
            for index, raw in enumerate(handle):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise DataError(
                        f"{path}: not UTF-8 text at line {index + 1} (byte {exc.start + 1}: {exc.reason})"
                    ) from None
                yield line.removeprefix(_BOM) if index == 0 else line
        except (OSError, EOFError) as exc:  # a truncated or corrupt gzip stream
            raise DataError(f"{path}: cannot read it ({exc})") from None


def check_utf8(path: str | Path, chunk_size: int = 1 << 20) -> None:
    """An error naming the line of the first byte that is not UTF-8. pyarrow (under ``datasets``) keeps
    such bytes and fails only when a value is read, with a traceback; this streams the file once, in C."""
    path = Path(path)
    if is_other_container(path):
        return
    decoder = codecs.getincrementaldecoder("utf-8")()
    newlines = 0
    with _open_binary(path) as handle:
        try:
            while chunk := handle.read(chunk_size):
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError as exc:
                    line = newlines + chunk.count(b"\n", 0, max(exc.start, 0)) + 1
                    raise DataError(f"{path}: not UTF-8 text at line {line} ({exc.reason})") from None
                newlines += chunk.count(b"\n")
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            raise DataError(f"{path}: not UTF-8 text at line {newlines + 1} ({exc.reason})") from None
        except (OSError, EOFError) as exc:
            raise DataError(f"{path}: cannot read it ({exc})") from None


def jsonl_records(path: str | Path, kind: str, locate: Locate | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line index from 0, record)`` for each non-blank line of a JSON-lines file. Bytes that are not UTF-8
    or a line that is not a JSON object are an error naming the file and line (``locate``; ``path:N`` by
    default)."""
    where = locate or at_line(path)
    for index, line in enumerate(read_lines(path, kind)):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{where(index)}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(value, dict):
            raise DataError(f"{where(index)}: a record must be a JSON object, got {type(value).__name__}")
        yield index, value


def read_jsonl(path: str | Path, kind: str) -> list[dict[str, Any]]:
    """The records of a JSON-lines file (blank lines skipped), errors naming the file and line: bytes that
    are not UTF-8, a line that is not a JSON object, no record at all. Loaders parse with ``datasets``
    (fast, columnar) and fall back to this when it fails: to say where, or to read records whose fields
    change type from one line to the next, which pyarrow refuses."""
    path = Path(path)
    rows = [record for _, record in jsonl_records(path, kind)]
    if not rows:
        raise DataError(f"{kind} file {path} is empty (no records)")
    return rows


def diagnose_text(path: str | Path, kind: str) -> None:
    """Raise the first problem of a text file: undecodable bytes, no non-blank line."""
    if not any(line.strip() for line in read_lines(path, kind)):
        raise DataError(f"{kind} file {path} is empty")


def read_log_records(path: str | Path) -> tuple[list[dict[str, Any]], int]:
    """The JSON objects of an append-only JSONL log (audit, judge, synthesis logs), in order, and how many
    non-blank lines are not one (a line cut short by a kill). A log that does not exist yet is empty."""
    numbered, unreadable = read_numbered_log_records(path)
    return [record for _, record in numbered], unreadable


def read_numbered_log_records(path: str | Path) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    """:func:`read_log_records` with each record's line number (1-based)."""
    path = Path(path)
    records: list[tuple[int, dict[str, Any]]] = []
    unreadable = 0
    if not path.is_file():
        return records, unreadable
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                unreadable += 1
                continue
            if isinstance(record, dict):
                records.append((number, record))
            else:
                unreadable += 1
    return records, unreadable
