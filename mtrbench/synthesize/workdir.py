"""The work directory's folders, one per pipeline stage (curate, cluster, generate, write; not an LLM stage,
which is ``mtrbench.llm.stage``): each stage writes its outputs, then ``summary.json`` last.

A stage is done when its ``summary.json`` exists and records the same settings (which include the
digest of the stage before it): a rerun with the same settings reuses it, a changed setting redoes it
and, through the digests, every later stage.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.numeric import json_lines, json_text

SUMMARY = "summary.json"


def settings_digest(settings: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


def finished_summary(folder: Path, settings: dict[str, Any]) -> dict[str, Any] | None:
    """The stage's summary when it finished with exactly these settings, else None."""
    path = folder / SUMMARY
    if not path.is_file():
        return None
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(summary, dict) or summary.get("settings_digest") != settings_digest(settings):
        return None
    return summary


def write_summary(folder: Path, settings: dict[str, Any], summary: dict[str, Any]) -> dict[str, Any]:
    full = {"settings": settings, "settings_digest": settings_digest(settings), **summary}
    atomic_write_text(folder / SUMMARY, json_text(full, path=folder / SUMMARY, indent=2, ensure_ascii=False) + "\n")
    return full


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    atomic_write_text(path, json_lines(rows, path=path, ensure_ascii=False))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
