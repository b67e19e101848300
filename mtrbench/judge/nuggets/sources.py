"""Where a turn's nuggets come from when a file is given: nuggetizer's nugget JSONL or iKAT 2024's gold JSON."""

from __future__ import annotations

import json
from pathlib import Path

from mtrbench.infra.errors import DataError
from mtrbench.judge.nuggets.ikat import DEFAULT_VITAL_GRADE, read_ikat_nuggets
from mtrbench.judge.nuggets.nugget_file import NuggetSet, read_nugget_file

FORMATS = ("auto", "nuggetizer", "ikat")


def _looks_like_ikat(path: Path) -> bool:
    """One JSON object keyed by turn id (iKAT), rather than records with a qid, one a line (nuggetizer)."""
    try:
        value = json.loads(path.read_text(encoding="utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False  # several lines of records, or not JSON at all: nuggetizer's reader says which line
    return isinstance(value, dict) and "qid" not in value and "nuggets" not in value


def read_nuggets(
    path: str | Path, file_format: str = "auto", vital_grade: int = DEFAULT_VITAL_GRADE
) -> dict[str, NuggetSet]:
    """qid -> its nuggets, from either layout (``auto``: told apart by the content)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"nugget file {path} does not exist")
    if file_format not in FORMATS:
        raise DataError(f"nugget file format {file_format!r} is not one of {', '.join(FORMATS)}")
    if file_format == "ikat" or (file_format == "auto" and _looks_like_ikat(path)):
        return read_ikat_nuggets(path, vital_grade)
    return read_nugget_file(path)
