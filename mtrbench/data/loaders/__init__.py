"""Format loaders. Each turns one split of a task card's source into the uniform ``TaskData``.

A loader is ``load(card, split, data_dir) -> TaskData``; ``data_dir`` overrides the card's source
with a local copy laid out like the published one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mtrbench.data.cards import TaskCard
from mtrbench.data.model import TaskData
from mtrbench.errors import unknown_name

Loader = Callable[[TaskCard, str, "Path | None"], TaskData]
LOADERS: dict[str, Loader] = {}


def register(name: str) -> Callable[[Loader], Loader]:
    def wrap(fn: Loader) -> Loader:
        LOADERS[name] = fn
        return fn

    return wrap


def get_loader(fmt: str) -> Loader:
    if fmt not in LOADERS:
        raise unknown_name("task format", fmt, LOADERS)
    return LOADERS[fmt]


from mtrbench.data.loaders import beir, native  # noqa: E402,F401  (registration side effects)
