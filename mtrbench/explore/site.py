"""Write the explorer: a static site that opens from disk (no server, nothing fetched from the network).

Layout under the output folder::

    index.html                 the conversations list (its data embedded)
    conversations/NNNN-ID.html one page per conversation (its data embedded)
    assets/explore.css, assets/explore.js   shared by every page

The task is loaded as eval loads it (its card, the result's split, ``--data-dir`` / ``--corpus``), keeping only
the passages the pages show; a task given as a path at ``eval`` time is found by the absolute path its result
records (``task_path``), from any folder.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

from mtrbench import __version__
from mtrbench.data import load_task, resolve_card
from mtrbench.data.cards import TaskCard
from mtrbench.explore.options import ExploreOptions
from mtrbench.explore.pages import (
    conversation_page,
    conversations_of,
    list_record,
    needed_passages,
)
from mtrbench.explore.queries import serialized_queries
from mtrbench.explore.systems import ExploreSystem
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import DataError, MtrbenchError, UserInputError, first_line
from mtrbench.infra.numeric import json_text
from mtrbench.results.result import Result

log = logging.getLogger(__name__)
ASSETS = ("explore.css", "explore.js")
CONVERSATIONS = "conversations"


@dataclass(frozen=True)
class TaskSource:
    data_dir: str | None = None
    corpus: str | None = None


@dataclass(frozen=True)
class SiteReport:
    index: Path
    conversations: int
    pages_bytes: int  # every file written, together


def script_json(data: Any) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' can end the element early."""
    text = json_text(data, path="the explorer page's data", ensure_ascii=False, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def page_html(title: str, data: dict[str, Any], assets: str) -> str:
    template = resources.files("mtrbench.explore").joinpath("page.html").read_text(encoding="utf-8")
    values = {
        "title": escape(title),
        "generator": escape(f"mtrbench {__version__}"),
        "assets": assets,
        "data": script_json(data),
    }
    # One pass over the template, so dataset text that looks like a placeholder is never substituted.
    return re.sub(r"\{\{(title|generator|assets|data)\}\}", lambda m: values[m.group(1)], template)


def _write_assets(output: Path) -> int:
    written = 0
    for name in ASSETS:
        text = resources.files("mtrbench.explore").joinpath(name).read_text(encoding="utf-8")
        atomic_write_text(output / "assets" / name, text)
        written += len(text.encode())
    return written


def task_card(result: Result) -> TaskCard:
    """The task of ``result`` from any folder: by the absolute path recorded for a task given as a path at
    ``eval`` time, else by its name (a registered task, or a folder of that name here, for older results)."""
    recorded = result.task_path
    if recorded is not None and Path(recorded).exists():
        return resolve_card(recorded)
    try:
        return resolve_card(result.task_name)
    except MtrbenchError as exc:
        if recorded is None:
            raise
        raise UserInputError(
            f"{result.path}: its task {recorded} is not there any more, and '{result.task_name}' is not a task "
            f"here ({first_line(exc)})"
        ) from None


def write_site(
    systems: Sequence[ExploreSystem], output: Path, options: ExploreOptions, source: TaskSource | None = None
) -> SiteReport:
    source = source or TaskSource()
    first = systems[0].result
    card = task_card(first)
    # every query's top-k in the runs (and the passages its answers were given): the only passages kept
    task = load_task(
        card,
        split=first.split,
        data_dir=source.data_dir,
        corpus_path=source.corpus,
        corpus_ids=needed_passages(systems, options),
    )
    conversations = conversations_of(task.queries, systems)
    if not conversations:
        raise DataError(f"{first.path}: none of its per-query rows names a query of {card.name} ({first.split})")
    queries = [q for c in conversations for q in c.queries]
    texts = [serialized_queries(s.result, card, queries) for s in systems]
    total = _write_assets(output)
    ids = [c.id for c in conversations]
    files = {c.id: c.file for c in conversations}
    for n, conversation in enumerate(conversations):
        neighbours = (
            files[ids[n - 1]] if n > 0 else None,
            files[ids[n + 1]] if n + 1 < len(ids) else None,
        )
        data = conversation_page(conversation, systems, texts, task.corpus, options, neighbours)
        html = page_html(f"{conversation.id} \u00b7 {card.name} \u00b7 mtrbench explore", data, "../assets")
        atomic_write_text(output / CONVERSATIONS / conversation.file, html)
        total += len(html.encode())
    index = output / "index.html"
    html = page_html(f"{card.name} \u00b7 mtrbench explore", list_record(conversations, systems, options), "assets")
    atomic_write_text(index, html)
    total += len(html.encode())
    log.info("explore: %d conversation pages under %s", len(conversations), output)
    return SiteReport(index, len(conversations), total)
