"""``generations.jsonl``: one answer per turn, appended and flushed as each turn finishes.

The file is the run's memory: a rerun reads it and asks only for turns not in it. A last line cut short by
a kill is ignored and counted, then cut off before the next append, so the file stays valid JSONL. Each record carries
the settings that made it (``generation.settings``); records made with other settings are never mixed into one
file (``generate``/``rag`` then write a file named by the settings' digest, see ``runner``); a history
written by its old name ("raw", "summary") is the same history by its current name ("full", "summary:llm"). A run
holds ``<file>.lock`` while it writes, so two runs never append to the same file. Failed turns never go
here: they are listed in ``<stem>.failures.jsonl`` (rewritten by each run) and asked again next time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.formats.generations import current_history
from mtrbench.generation.settings import describe_differences, differences, unrecorded
from mtrbench.infra.atomic import LineAppender, atomic_write_text, check_file_target
from mtrbench.infra.errors import DataError
from mtrbench.infra.locking import LockHolder, held_lock, lock_path_for
from mtrbench.infra.numeric import json_lines, json_text
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.redact import Redactor
from mtrbench.llm.stage import StageRecord, judge_redactor


@dataclass
class StoredGenerations:
    done: dict[str, dict[str, Any]] = field(default_factory=dict)  # qid -> record
    unreadable_lines: int = 0  # the torn last line of a killed run (any other unreadable line is refused)
    duplicates: int = 0
    unrecorded: dict[str, int] = field(default_factory=dict)  # setting -> records without it (older files)


def _parse_line(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(record, None), (None, None) for an empty line, or (None, why the line cannot be read)."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (byte {exc.start + 1}: {exc.reason})"
    if not line.strip():
        return None, None
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None, "not a JSON record"
    if not isinstance(record, dict) or not isinstance(record.get("qid"), str):
        return None, "not a generations record (a JSON object with a string qid)"
    return record, None


class GenerationStore:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._handle: LineAppender | None = None

    @property
    def failures_path(self) -> Path:
        return self.path.with_name(f"{self.path.stem}.failures.jsonl")

    def hold(self) -> AbstractContextManager[LockHolder]:
        return held_lock(lock_path_for(self.path), purpose=f"generations {self.path}")

    def _records(self) -> Iterator[tuple[int, dict[str, Any] | None]]:
        """(line number, record) of every non-empty line; None for a last line without its newline (what a kill
        leaves). Any other line that cannot be read (not UTF-8, not a generations record) is a DataError: appending
        never proceeds past it, as the commands that read the file later would refuse it."""
        with self.path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                record, problem = _parse_line(raw)
                if problem is None and record is None:
                    continue  # an empty line
                if not raw.endswith(b"\n"):  # the last line, cut short by a kill: cut off before appending, so
                    yield number, None  # even a whole record there is asked again rather than lost
                    continue
                if problem is not None:
                    raise DataError(
                        f"{self.path}:{number}: {problem}; nothing is appended to a generations file past a line "
                        "that cannot be read: repair or move the file, or pass --output to write another one"
                    )
                if record is not None and isinstance(record.get("history"), str):  # an old name ("raw") is current
                    record["history"] = current_history(record["history"], record.get("history_source"))
                yield number, record

    def other_settings(self, settings: Mapping[str, Any]) -> str | None:
        """How the first record made with other settings differs (``settings``: the compared ones), or None when
        every record matches (or there is no file)."""
        if not self.path.is_file():
            return None
        for _, record in self._records():
            if record is not None:
                differs = differences(record, settings)
                if differs:
                    return describe_differences(differs)
        return None

    def read(self, settings: Mapping[str, Any]) -> StoredGenerations:
        """The finished turns; a record made with other settings is a DataError (never mixed into one file)."""
        stored = StoredGenerations()
        if not self.path.is_file():
            return stored
        for number, record in self._records():
            if record is None:
                stored.unreadable_lines += 1
                continue
            differs = differences(record, settings)
            if differs:
                raise DataError(
                    f"{self.path}:{number}: generated with other settings: "
                    f"{describe_differences(differs)}; pass --output to write these generations to "
                    "another file"
                )
            if record["qid"] in stored.done:
                stored.duplicates += 1
                continue
            for key in unrecorded(record, settings):
                stored.unrecorded[key] = stored.unrecorded.get(key, 0) + 1
            stored.done[record["qid"]] = record
        return stored

    def __enter__(self) -> GenerationStore:
        check_file_target(self.path)  # a folder given for the file: one line, before anything is cut or appended
        if self.path.is_file():
            self._cut_torn_tail()
        self._handle = LineAppender(self.path, fsync=True)
        return self

    def _cut_torn_tail(self) -> None:
        """Drop bytes after the last newline: half a record from a killed run (counted by ``read``)."""
        with self.path.open("rb+") as handle:
            end = handle.seek(0, 2)
            position, chunk = end, 1 << 16
            while position > 0:
                start = max(0, position - chunk)
                handle.seek(start)
                block = handle.read(position - start)
                newline = block.rfind(b"\n")
                if newline >= 0:
                    keep = start + newline + 1
                    break
                position = start
            else:
                keep = 0
            if keep < end:
                handle.truncate(keep)

    def append(self, record: dict[str, Any], redact: Redactor | None = None) -> None:
        assert self._handle is not None, "use GenerationStore as a context manager to append"
        line = json_text(record, path=self.path, ensure_ascii=False)
        self._handle.write((redact.known(line) if redact is not None else line) + "\n")

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def write_failures(self, failures: list[dict[str, Any]]) -> None:
        if failures:
            atomic_write_text(self.failures_path, json_lines(failures, path=self.failures_path, ensure_ascii=False))
        elif self.failures_path.exists():
            self.failures_path.unlink()


class AnswerSink:
    """Where the answer stage's records go (``run_stage(..., on_record=sink)``), so the generations file keeps its
    own layout: an answered turn is appended to the open store as its generations record (the item's fields, then
    the answer, ``cached``, ``time`` and any malformed replies), without the judges' secrets; a failed one is kept
    in ``failed`` for the failures file."""

    def __init__(self, store: GenerationStore, judges: Sequence[JudgeConfig]) -> None:
        self.store = store
        self._redact = judge_redactor(judges)
        self.failed: list[StageRecord] = []  # this run's failed turns, in the order they finished
        self.answered = 0  # turns appended by this run

    def __call__(self, record: StageRecord) -> None:
        if not record.ok:
            self.failed.append(record)
            return
        malformed = [dict(m) for m in record.malformed]  # redacted by the client
        line = dict(
            record.fields,
            answer=record.value,
            cached=record.cached,
            time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **({"malformed": malformed} if malformed else {}),
        )
        self.store.append(line, self._redact)
        self.answered += 1
