"""On-disk response cache (sqlite): a re-run costs nothing and an interrupted run resumes.

Rows are keyed by a hash of (model, messages, generation parameters). The server address is not part
of the key, so the same model moved to another host keeps its cache. Only replies that parsed are
stored. Nothing secret is stored: the API key is neither part of a key nor of a row.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from mtrbench.infra.errors import DataError

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL
)
"""


def request_key(model: str, messages: list[dict], params: dict) -> str:
    """sha256 hex of the canonical JSON of what determines a reply."""
    canonical = json.dumps(
        {"model": model, "messages": messages, "params": params},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def default_cache_path() -> Path:
    root = os.environ.get("MTRBENCH_CACHE_DIR")
    return (Path(root) if root else Path.home() / ".cache" / "mtrbench") / "llm.sqlite"


class ResponseCache:
    """sqlite3 file in WAL mode; one connection guarded by a lock, so threads may share an instance and
    several processes may share a file (sqlite serialises their writes). Each ``put`` is one transaction."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(SCHEMA)
        except (sqlite3.Error, OSError) as err:
            raise DataError(
                f"LLM cache {self.path} cannot be used ({err}); pass another --llm-cache PATH or --no-llm-cache"
            ) from None

    def get(self, key: str) -> dict | None:
        """``{"text", "model", "prompt_tokens", "completion_tokens", "created"}`` or None."""
        with self._lock:
            row = self._conn.execute(
                "SELECT text, model, prompt_tokens, completion_tokens, created FROM responses WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        return {
            "text": row[0],
            "model": row[1],
            "prompt_tokens": row[2],
            "completion_tokens": row[3],
            "created": row[4],
        }

    def put(self, key: str, record: dict[str, Any]) -> None:
        """Store (or replace) a reply; ``record`` needs ``text`` and may carry model, token counts, created."""
        if not isinstance(record.get("text"), str):
            raise ValueError("cache record needs a 'text' string")
        values = (
            key,
            str(record.get("model") or ""),
            record["text"],
            int(record.get("prompt_tokens") or 0),
            int(record.get("completion_tokens") or 0),
            float(record.get("created") or time.time()),
        )
        with self._lock:
            with self._conn:  # one transaction: a killed run leaves the row fully written or absent
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.execute(
                    "INSERT OR REPLACE INTO responses (key, model, text, prompt_tokens, completion_tokens, created)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    values,
                )

    def delete(self, key: str) -> None:
        """Drop a row (a cached reply that no longer parses)."""
        with self._lock:
            with self._conn:
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.execute("DELETE FROM responses WHERE key = ?", (key,))

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return self._conn.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"
