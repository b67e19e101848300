"""Pieces shared by loaders."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from mtrbench.data.hub import load_split
from mtrbench.data.model import ASSISTANT, USER, Corpus, Message
from mtrbench.formats.lines import at_record
from mtrbench.formats.qrels import Qrels, QrelsLayout, parse_qrels
from mtrbench.infra.errors import DataError

# While set, the shared corpus readers keep only these document ids (rows are streamed, the rest never stored):
# a tool that shows a few passages of a million-passage corpus (`mtrbench explore`) sets it through
# ``load_task(corpus_ids=...)``. Qrels naming a document left out are then dropped like unknown ones.
_KEPT_IDS: ContextVar[frozenset[str] | None] = ContextVar("kept_corpus_ids", default=None)


@contextmanager
def keeping_only(ids: Collection[str] | None) -> Iterator[None]:
    """Within the block, corpora read by :func:`corpus_from_rows` / :func:`corpus_from_dataset` hold only ``ids``
    (None: every document)."""
    token = _KEPT_IDS.set(None if ids is None else frozenset(ids))
    try:
        yield
    finally:
        _KEPT_IDS.reset(token)


def corpus_from_rows(rows: Iterable[dict[str, Any]], origin: str, id_field: str = "_id") -> Corpus:
    """A ``Corpus`` from ``{id_field, text, title?}`` records: dicts, or a ``datasets.Dataset``, which is read
    column by column (a million rows one dict at a time took 50 s; by column, about a second)."""
    if hasattr(rows, "column_names") and hasattr(rows, "select_columns"):
        return corpus_from_dataset(
            rows,
            origin,
            id_column=id_field,
            text_column="text",
            title_column="title" if "title" in rows.column_names else None,
        )
    ids: list[str] = []
    titles: list[str] = []
    texts: list[str] = []
    kept = _KEPT_IDS.get()
    for n, row in enumerate(rows):
        doc_id = row.get(id_field)
        if doc_id is None:
            raise DataError(f"{origin}: corpus record {n} has no '{id_field}'")
        if kept is not None and str(doc_id) not in kept:
            continue
        text = row.get("text")
        if text is None:
            raise DataError(f"{origin}: corpus record '{doc_id}' has no 'text'")
        ids.append(str(doc_id))
        titles.append(str(row.get("title") or ""))
        texts.append(str(text))
    return Corpus(ids=ids, titles=titles, texts=texts)


_ROLE_ALIASES = {
    "user": USER,
    "human": USER,
    "question": USER,
    "assistant": ASSISTANT,
    "agent": ASSISTANT,
    "system": None,
    "bot": ASSISTANT,
    "model": ASSISTANT,
}


def parse_messages(raw: Any, origin: str) -> list[Message]:
    """Messages from ``[{"role", "content"}]`` or ``[str, ...]`` (mteb: plain strings are user turns)."""
    if isinstance(raw, str):
        return [Message(USER, raw)]
    if not isinstance(raw, list):
        raise DataError(f"{origin}: conversation must be a list of messages, got {type(raw).__name__}")
    messages: list[Message] = []
    for i, item in enumerate(raw):
        if isinstance(item, str):
            messages.append(Message(USER, item))
            continue
        if not isinstance(item, dict) or "content" not in item:
            raise DataError(f"{origin}: message {i} must be a string or have 'role' and 'content'")
        role_name = str(item.get("role", "user")).lower()
        if role_name not in _ROLE_ALIASES:
            raise DataError(f"{origin}: message {i} has unknown role '{role_name}'")
        role = _ROLE_ALIASES[role_name]
        if role is not None:
            messages.append(Message(role, str(item["content"] or "")))
    return messages


def corpus_from_dataset(
    ds, origin: str, *, id_column: str | None, text_column: str, title_column: str | None = None, id_prefix: str = ""
) -> Corpus:
    """A ``Corpus`` from a ``datasets.Dataset`` column-wise (millions of rows: no per-row dicts).

    ``id_column=None`` numbers rows from 0.
    """
    columns = [c for c in (id_column, text_column, title_column) if c]
    missing = [c for c in columns if c not in ds.column_names]
    if missing:
        raise DataError(f"{origin}: corpus needs column(s) {missing} (has {ds.column_names})")
    kept = _KEPT_IDS.get()
    if kept is not None:  # only the wanted rows' texts are read
        all_ids = ds[id_column] if id_column else range(len(ds))
        rows = [n for n, value in enumerate(all_ids) if f"{id_prefix}{value}" in kept]
        ds = ds.select(rows)
        if not id_column:  # rows are numbered in the whole corpus, not in the selection
            numbers = [f"{id_prefix}{n}" for n in rows]
            return _numbered(ds, numbers, text_column, title_column, origin)
    data = ds.select_columns(columns).to_dict()
    texts = data[text_column]
    if id_column:
        raw_ids = data[id_column]
        for n, value in enumerate(raw_ids):
            if value is None:
                raise DataError(f"{origin} record {n}: no '{id_column}'")
        ids = [f"{id_prefix}{value}" for value in raw_ids]
    else:
        ids = [f"{id_prefix}{n}" for n in range(len(texts))]
    for n, text in enumerate(texts):
        if text is None:
            raise DataError(f"{origin} record {n} ({ids[n]}): no '{text_column}'")
    texts = [text if isinstance(text, str) else str(text) for text in texts]
    titles = [str(t) if t else "" for t in data[title_column]] if title_column else [""] * len(ids)
    return Corpus(ids=ids, titles=titles, texts=texts)


def _numbered(ds, ids: list[str], text_column: str, title_column: str | None, origin: str) -> Corpus:
    data = ds.select_columns([c for c in (text_column, title_column) if c]).to_dict()
    texts = data[text_column]
    for n, text in enumerate(texts):
        if text is None:
            raise DataError(f"{origin} record {ids[n]}: no '{text_column}'")
    titles = [str(t) if t else "" for t in data[title_column]] if title_column else [""] * len(ids)
    return Corpus(ids=ids, titles=titles, texts=[t if isinstance(t, str) else str(t) for t in texts])


def text_lines(path: Path, what: str) -> Iterable[str]:
    """The lines of a text file read through ``load_split`` (datasets' text builder), as loaders read data;
    record n is line n + 1."""
    lines = load_split(path, builder="text", data_files=str(path), split="train", what=what)["text"]
    if len(lines) and lines[0].startswith("\ufeff"):  # datasets' text builder keeps a byte order mark
        lines = list(lines)
        lines[0] = lines[0][1:]
    return lines


def load_qrels(
    path: Path, layout: QrelsLayout, what: str, on_duplicate: Callable[[str, str], object] | None = None
) -> Qrels:
    """A qrels file read through ``load_split``; errors name the file and record, ids a TREC run cannot
    hold included (a run written for them could not be read back)."""
    return parse_qrels(text_lines(path, what), at_record(path), layout, on_duplicate=on_duplicate, trec_ids=True)


def read_jsonl_records(path: Path, what: str | None = None) -> list[tuple[int, Any]]:
    """(record index, parsed object) per non-blank line, read through ``load_split`` (datasets' text builder);
    a malformed line is an error naming the file and record."""
    out = []
    for n, line in enumerate(text_lines(path, what or str(path.name))):
        if not line.strip():
            continue
        try:
            out.append((n, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise DataError(f"{path} record {n}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    return out
