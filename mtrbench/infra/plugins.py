"""Plugins: task cards, model aliases and measure families that other installed packages register through
Python entry points (docs/plugins.md).

An entry point names an object (``package.module:ATTRIBUTE``); a callable (a function, or a class) is
called with no arguments and what it returns is used; a list or tuple registers each of its items.

* ``mtrbench.tasks``: a task card YAML file, a folder whose ``*.yaml`` files are task cards, or a
  ``TaskCard``. A relative path is relative to the folder of the entry point's module, and a card's
  ``source.path`` is relative to the card file it came from (a ``TaskCard`` object without a
  ``card_path``: to that module's file).
* ``mtrbench.models``: a ``ModelSpec`` (mtrbench.retrieve.registry).
* ``mtrbench.measures``: a ``MeasureFamily`` instance (mtrbench.measures.base).

Each group is read once per process, and only when a name is looked up that is not built in or when its
items are listed, so commands that never look one up (``mtrbench --version``) pay nothing. Built-in
names win; a name taken by a built-in or by an earlier plugin (entry points in the order of their
distribution's and their own name), an entry point that fails to load, and an item of the wrong type are
each one ``warning: plugin ...`` warning, logged (the command line prints it on stderr) and recorded in
:func:`warnings`, and are skipped.

This module knows nothing of cards, models or measures: their registries import it, never the reverse.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

log = logging.getLogger(__name__)

TASKS = "mtrbench.tasks"
MODELS = "mtrbench.models"
MEASURES = "mtrbench.measures"
GROUPS = (TASKS, MODELS, MEASURES)

BUILT_IN = "built-in"  # the origin of what mtrbench itself defines

_WARNINGS: list[str] = []

T = TypeVar("T")


def warn(message: str) -> None:
    """One ``warning:`` line, logged (on stderr from the command line); the same message once per process."""
    if message not in _WARNINGS:
        _WARNINGS.append(message)
        log.warning(f"warning: {message}")


def warnings() -> list[str]:
    """The plugin warnings printed so far in this process (without the ``warning: `` prefix)."""
    return list(_WARNINGS)


@dataclass(frozen=True)
class Entry:
    """One loaded entry point: what it registered and where it came from."""

    group: str
    name: str
    value: str  # module:attribute
    origin: str  # the distribution that declares it: "name version"
    items: tuple[object, ...]
    module_file: Path | None  # the file of the module the entry point names (relative paths start next to it)

    def warn(self, message: str) -> None:
        warn(f"plugin {self.name} ({self.group} = {self.value}, {self.origin}): {message}")


def _origin(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "unknown package"
    return f"{dist.name} {dist.version}"


def _module_file(module_name: str) -> Path | None:
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    return Path(path).resolve() if path else None


@cache
def entries(group: str) -> tuple[Entry, ...]:
    """The entry points of ``group`` that loaded, once per process; each failure is one warning."""
    if group not in GROUPS:
        raise ValueError(f"unknown plugin group {group!r}; groups: {', '.join(GROUPS)}")
    from importlib.metadata import entry_points

    found = sorted(entry_points(group=group), key=lambda ep: (_origin(ep), ep.name, ep.value))
    loaded: list[Entry] = []
    for ep in found:
        origin = _origin(ep)
        try:
            obj = ep.load()
            if callable(obj):
                obj = obj()
        except Exception as exc:  # a broken plugin must not break mtrbench
            warn(
                f"plugin {ep.name} ({group} = {ep.value}, {origin}): cannot load it: "
                f"{type(exc).__name__}: {exc}; skipped"
            )
            continue
        items = tuple(obj) if isinstance(obj, (list, tuple)) else (obj,)
        loaded.append(Entry(group, ep.name, ep.value, origin, items, _module_file(ep.module)))
    return tuple(loaded)


@dataclass(frozen=True)
class Candidate(Generic[T]):
    """An item a plugin offers under ``names`` (a measure family answers to several); ``label`` names it
    in warnings."""

    names: tuple[str, ...]
    label: str
    item: T
    entry: Entry


def merge(kind: str, builtin: Collection[str], candidates: Iterable[Candidate[T]]) -> list[Candidate[T]]:
    """The candidates that keep their names: one whose name is built in or was taken by an earlier
    candidate is a warning and is dropped (built-ins win, then the first plugin)."""
    owners: dict[str, Candidate[T]] = {}
    kept: list[Candidate[T]] = []
    for candidate in candidates:
        clash = next((n for n in candidate.names if n in builtin or n in owners), None)
        if clash is not None and clash in builtin:
            candidate.entry.warn(
                f"{kind} '{candidate.label}': the name '{clash}' is built in; the built-in one is used"
            )
        elif clash is not None:
            first = owners[clash].entry
            candidate.entry.warn(
                f"{kind} '{candidate.label}': the name '{clash}' is already registered by "
                f"plugin {first.name} ({first.origin}); that one is used"
            )
        else:
            owners.update(dict.fromkeys(candidate.names, candidate))
            kept.append(candidate)
    return kept


__all__ = [
    "BUILT_IN",
    "GROUPS",
    "MEASURES",
    "MODELS",
    "TASKS",
    "Candidate",
    "Entry",
    "entries",
    "merge",
    "warn",
    "warnings",
]
