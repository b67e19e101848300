"""Stable keys and short names for what results record."""

from __future__ import annotations

import json
from typing import Any


def canonical(value: Any) -> str:
    """One string per JSON value, equal for equal values (keys sorted): a key for grouping settings."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def short_model(model: str) -> str:
    """``org/name`` (or a local path) -> ``name``."""
    return model.rstrip("/").rsplit("/", 1)[-1]
