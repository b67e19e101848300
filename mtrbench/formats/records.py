"""Small user-supplied record files (human scores, human labels): JSONL or CSV, chosen by suffix.

Each record comes with ``where`` (``FILE line N``) so every error can name the exact line. JSON Lines are
read by ``formats.lines`` (UTF-8, an optional byte order mark, gzip), as every other JSONL input.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from mtrbench.formats.lines import jsonl_records
from mtrbench.infra.errors import DataError


def read_records(path: str | Path, required_columns: set[str] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """``[(where, record), ...]`` from a ``.csv`` file (header row) or JSON Lines (anything else)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path} does not exist")
    if path.suffix.lower() == ".csv":
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = (required_columns or set()) - set(reader.fieldnames or ())
            if missing:
                raise DataError(f"{path}: the CSV header lacks the column(s) {', '.join(sorted(missing))}")
            return [(f"{path} line {reader.line_num}", row) for row in reader]

    def where(index: int) -> str:
        return f"{path} line {index + 1}"

    return [(where(index), record) for index, record in jsonl_records(path, "records", where)]
