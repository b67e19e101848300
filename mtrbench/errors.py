"""User-facing errors: one actionable line, no traceback."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class MtrbenchError(Exception):
    """An error caused by input or environment that the user can fix.

    The CLI prints ``error: <message>`` on one line and exits with status 2.
    """


class HubUnavailableError(MtrbenchError):
    """Something had to be fetched from the Hugging Face Hub and could not be."""


def closest(name: str, candidates: Iterable[str], n: int = 3) -> str:
    """A short "did you mean" suffix listing the closest known names."""
    candidates = sorted(set(candidates))
    matches = difflib.get_close_matches(name, candidates, n=n, cutoff=0.4)
    if not matches:
        matches = [c for c in candidates if name.lower() in c.lower()][:n]
    return f" Did you mean: {', '.join(matches)}?" if matches else ""


def unknown_name(kind: str, name: str, candidates: Iterable[str], hint: str = "") -> MtrbenchError:
    candidates = list(candidates)
    return MtrbenchError(f"unknown {kind} '{name}'.{closest(name, candidates)}{(' ' + hint) if hint else ''}")
