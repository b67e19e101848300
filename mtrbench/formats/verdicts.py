"""Per-query binary generation verdicts (JSONL or TSV), the input of RAGAlign (:mod:`mtrbench.measures.families.ragalign`)."""

from __future__ import annotations

import json
from pathlib import Path

from mtrbench.infra.errors import DataError

_TRUE = {"1", "true", "yes", "correct"}
_FALSE = {"0", "false", "no", "incorrect"}


def _binary(value, where: str) -> int:
    text = str(value).strip().lower()
    if text in _TRUE or value is True:
        return 1
    if text in _FALSE or value is False:
        return 0
    raise DataError(f"{where}: generation outcome must be binary (0/1, true/false), got {value!r}")


def read_generation_judgments(path: str | Path) -> dict[str, int]:
    """JSONL ``{"qid": ..., "label": 0|1}`` (``correct`` or ``judgment`` also accepted) or TSV ``qid<TAB>label``."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"generation judgments file {path} does not exist")
    out: dict[str, int] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        if line.lstrip().startswith("{"):
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{where}: not valid JSON ({exc.msg})") from None
            key = next((k for k in ("label", "correct", "judgment") if k in row), None)
            if "qid" not in row or key is None:
                raise DataError(f"{where}: needs 'qid' and 'label' (or 'correct'/'judgment')")
            qid, value = str(row["qid"]), row[key]
        else:
            parts = line.split()
            if len(parts) != 2:
                raise DataError(f"{where}: a TSV line needs 'qid label'")
            qid, value = parts
        if qid in out:
            raise DataError(f"{where}: query '{qid}' judged twice")
        out[qid] = _binary(value, where)
    return out
