"""Format loaders. Each turns one split of a task card's source into the uniform ``TaskData``.

A loader is ``load(card, request) -> TaskData``. ``request.data_dir`` overrides the card's source
with a local copy laid out like the published one; ``request.corpus_path`` points at an external
corpus for benchmarks that do not ship one (TREC CAsT, QReCC, TopiOCQA). Every module in this
package is imported on first use, so a new format is one new file with ``@register("name")``.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mtrbench.data.cards import TaskCard
from mtrbench.data.model import TaskData
from mtrbench.infra.errors import unknown_name


@dataclass(frozen=True)
class LoadRequest:
    split: str
    data_dir: Path | None = None  # local copy of the card's source
    corpus_path: Path | None = None  # external corpus, for tasks that do not ship theirs
    require_corpus: bool = True  # False: queries/qrels only (stats, scoring), corpus may be empty


Loader = Callable[[TaskCard, LoadRequest], TaskData]
LOADERS: dict[str, Loader] = {}
_DISCOVERED = False


def register(name: str) -> Callable[[Loader], Loader]:
    def wrap(fn: Loader) -> Loader:
        LOADERS[name] = fn
        return fn

    return wrap


def _discover() -> None:
    global _DISCOVERED
    if not _DISCOVERED:
        for module in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{module.name}")
        _DISCOVERED = True


def get_loader(fmt: str) -> Loader:
    _discover()
    if fmt not in LOADERS:
        raise unknown_name("task format", fmt, LOADERS)
    return LOADERS[fmt]
