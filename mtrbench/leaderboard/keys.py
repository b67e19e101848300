"""What makes two leaderboard entries the same result, the same system, or comparable.

* identity: same model, revision, task, split, dataset revision and every score-changing setting
  (two entries with one identity are duplicates);
* comparability: entries are ranked and averaged together only when they share the label (run or
  reported), history strategy, truncation, query format and, for reported numbers, the paper table
  they come from; dataset revision and split must match per task (handled by the grouping);
* system: model + revision + the remaining settings (max length, prompts, dtype, ...); averages are
  taken per system over the tasks of a group.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mtrbench.leaderboard.entries import RUN, EntryLike, as_entry
from mtrbench.results.labels import canonical
from mtrbench.results.settings import DEFAULT_PROTOCOL, RETRIEVER_EXECUTION_KEYS, without_keys

COMPARABILITY_SETTINGS = ("history", "truncate", "query_format")


def score_settings(entry: EntryLike) -> dict[str, Any]:
    """The entry's settings without the retriever's that only change how fast it ran (the execution keys of
    ``results/settings.py``, at the retriever's top level)."""
    settings = dict(as_entry(entry).settings)
    if isinstance(settings.get("retriever"), dict):
        settings["retriever"] = without_keys(settings["retriever"], RETRIEVER_EXECUTION_KEYS, nested=False)
    return settings


def reported_in(entry: EntryLike) -> str | None:
    typed = as_entry(entry)
    if not typed.is_reported:
        return None
    return ", ".join(str(p) for p in (typed.source.get("citation"), typed.source.get("table")) if p)


def identity(entry: EntryLike) -> str:
    typed = as_entry(entry)
    parts: dict[str, Any] = {
        "label": typed.label,
        "model": typed.model,
        "model_revision": typed.model_revision,
        "task": typed.task,
        "split": typed.split,
        "dataset_revision": typed.dataset_revision,
        "settings": score_settings(typed),
    }
    if typed.is_reported:
        parts["reported"] = [typed.source.get(k) for k in ("citation", "table", "row")]
    return canonical(parts)


def comparability(entry: EntryLike) -> dict[str, Any]:
    typed = as_entry(entry)
    settings = typed.settings
    keys = {
        "label": typed.label,
        "history": settings.get("history"),
        "truncate": settings.get("truncate"),
        "query_format": settings.get("query_format"),
        "reported_in": reported_in(typed),
    }
    if settings.get("limit") is not None:  # a run on the first N conversations is ranked only with its like
        keys["limit"] = settings["limit"]
    if settings.get("protocol", DEFAULT_PROTOCOL) != DEFAULT_PROTOCOL:  # an official protocol's numbers rank apart
        keys["protocol"] = settings["protocol"]
    if settings.get("ptkb"):  # queries with personal statements (TREC iKAT's PTKB) rank apart
        keys["ptkb"] = settings["ptkb"]
    if settings.get("queries_left_out"):  # a mean over fewer queries (its rewriter failed on some) ranks apart
        keys["queries_left_out"] = settings["queries_left_out"]
    return keys


def truncation_free(entry: EntryLike) -> bool:
    """A run whose retriever has no token limit (BM25): no truncation policy can change its scores."""
    typed = as_entry(entry)
    return (
        typed.label == RUN
        and typed.settings.get("max_length") is None
        and typed.settings.get("truncate") in ("none", None)
    )


def system_settings(entry: EntryLike) -> dict[str, Any]:
    typed = as_entry(entry)
    settings = {k: v for k, v in score_settings(typed).items() if k not in COMPARABILITY_SETTINGS}
    if typed.is_reported and typed.source.get("row"):
        settings["row"] = typed.source["row"]
    return settings


def system_identity(entry: EntryLike) -> str:
    typed = as_entry(entry)
    return canonical([typed.model, typed.model_revision, system_settings(typed)])


def flatten(settings: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"retriever": {"dtype": "fp32"}}`` -> ``{"retriever.dtype": "fp32"}``."""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
