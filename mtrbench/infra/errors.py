"""User-facing errors: one actionable line, no traceback."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message for a one-line error, or its type's name when it has none."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


class MtrbenchError(Exception):
    """An error caused by input or environment that the user can fix.

    The CLI prints ``error: <message>`` on one line and exits with status 2.
    """


class UserInputError(MtrbenchError):
    """A flag, argument or Python value that cannot be used as given (unknown name, bad number, bad object)."""


class DataError(MtrbenchError):
    """A file or dataset record that is missing, malformed or inconsistent; the message names file and record."""


class ModelError(MtrbenchError):
    """A model that cannot be loaded or used (missing package, no such checkpoint, wrong shape of object)."""


class LLMError(MtrbenchError):
    """An LLM endpoint that failed or kept replying in a form that cannot be read."""


class TooManyFailures(LLMError):
    """An LLM stage failed on more than ``--max-failure-rate`` of its items: what succeeded is kept (written or
    cached), and the command exits 1, not 2, because the input was fine."""

    exit_code = 1

    def __init__(self, message: str, finished: list[object] | None = None) -> None:
        super().__init__(message)
        self.finished = list(finished or [])  # what the command did complete (e.g. the other histories' results)


class HubUnavailableError(MtrbenchError):
    """Something had to be fetched from the Hugging Face Hub and could not be."""


def closest(name: str, candidates: Iterable[str], n: int = 3) -> str:
    """A short "did you mean" suffix listing the closest known names."""
    candidates = sorted(set(candidates))
    matches = difflib.get_close_matches(name, candidates, n=n, cutoff=0.4)
    if not matches:
        matches = [c for c in candidates if name.lower() in c.lower()][:n]
    return f" Did you mean: {', '.join(matches)}?" if matches else ""


def unknown_name(kind: str, name: str, candidates: Iterable[str], hint: str = "") -> UserInputError:
    candidates = list(candidates)
    return UserInputError(f"unknown {kind} '{name}'.{closest(name, candidates)}{(' ' + hint) if hint else ''}")
