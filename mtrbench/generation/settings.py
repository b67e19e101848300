"""What decides an answer (or a verdict): recorded with each one, compared before finished work is reused.

A record carries the model, the endpoint without credentials, the prompt hash, max tokens, temperature, seed,
the passages shown (top-k and the per-passage cut) and the history mode. Reuse compares every one of them but
the endpoint: the same model id on a restarted local server (a new port) or behind another proxy answers the
same requests, so the endpoint is kept for the record only.

A record written before these fields were recorded is compared on the settings it does carry (generator,
history, source, top-k and prompt hash have always been recorded); the ones it lacks cannot be checked, and it is
reused with a ``note:`` naming them, never silently. Regenerating it would throw away finished, paid-for work on
the chance that a setting changed; the note says how to force it (move the file away).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.preflight import endpoint_label

RECORD_ONLY = ("endpoint",)  # recorded, not compared (see the module docstring)


@dataclass(frozen=True)
class ModelSettings:
    """The request settings of one model (generator or judge)."""

    model: str
    endpoint: str
    max_tokens: int
    temperature: float
    seed: int | None

    @classmethod
    def of(cls, judge: JudgeConfig) -> ModelSettings:
        seed = judge.extra_body.get("seed") if isinstance(judge.extra_body, dict) else None
        return cls(
            model=judge.model,
            endpoint=endpoint_label(judge),
            max_tokens=judge.max_tokens,
            temperature=float(judge.temperature),
            seed=seed,
        )


@dataclass(frozen=True)
class GenerationSettings:
    """Everything that decides one generated answer, as written into its record."""

    generator: str
    endpoint: str
    max_tokens: int
    temperature: float
    seed: int | None
    prompt_hash: str
    top_k: int  # passages shown
    max_passage_chars: int | None  # each passage cut to this many characters; None: whole
    history: str
    history_source: str  # task | gold | llm:<rewriter model>
    source: str  # run | oracle

    def record(self) -> dict[str, Any]:
        return asdict(self)

    def compared(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k not in RECORD_ONLY}

    def digest(self) -> str:
        """Eight hex digits naming the compared settings (file names of runs made with other settings)."""
        return settings_digest(self.compared())


def settings_digest(compared: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(dict(compared), sort_keys=True, default=str).encode()).hexdigest()[:8]


def differences(record: Mapping[str, Any], compared: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Setting -> (recorded, now) for every compared setting the record carries and does not match."""
    return {key: (record[key], now) for key, now in compared.items() if key in record and record[key] != now}


def unrecorded(record: Mapping[str, Any], compared: Mapping[str, Any]) -> list[str]:
    """The compared settings a record does not carry (written before they were recorded)."""
    return [key for key in compared if key not in record]


def unrecorded_note(where: object, count: int, keys: list[str]) -> str:
    return (
        f"note: {count} record(s) in {where} predate recorded settings ({', '.join(keys)} not recorded) and are "
        "reused as they are; move the file away to make them again"
    )


def describe_differences(differs: Mapping[str, tuple[Any, Any]], limit: int = 4) -> str:
    shown = [f"{key} {old!r} (now {new!r})" for key, (old, new) in list(differs.items())[:limit]]
    more = len(differs) - limit
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")
