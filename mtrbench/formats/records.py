"""Small user-supplied record files (human scores, human labels): JSONL or CSV, chosen by suffix.

Each record comes with ``where`` (``FILE line N``) so every error can name the exact line.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from mtrbench.infra.errors import MtrbenchError


def read_records(path: str | Path, required_columns: set[str] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """``[(where, record), ...]`` from a ``.csv`` file (header row) or JSON Lines (anything else)."""
    path = Path(path)
    if not path.is_file():
        raise MtrbenchError(f"{path} does not exist")
    if path.suffix.lower() == ".csv":
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = (required_columns or set()) - set(reader.fieldnames or ())
            if missing:
                raise MtrbenchError(f"{path}: the CSV header lacks the column(s) {', '.join(sorted(missing))}")
            return [(f"{path} line {reader.line_num}", row) for row in reader]
    records = []
    with path.open(encoding="utf-8") as handle:
        for n, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise MtrbenchError(f"{path} line {n}: not valid JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise MtrbenchError(f"{path} line {n}: expected a JSON object")
            records.append((f"{path} line {n}", record))
    return records
