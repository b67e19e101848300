"""What makes two leaderboard entries the same result, the same system, or comparable.

* identity: same model, revision, task, split, dataset revision and every score-changing setting
  (two entries with one identity are duplicates);
* comparability: entries are ranked and averaged together only when they share the label (run or
  reported), history strategy, truncation, query format and, for reported numbers, the paper table
  they come from; dataset revision and split must match per task (handled by the grouping);
* system: model + revision + the remaining settings (max length, prompts, dtype, ...); averages are
  taken per system over the tasks of a group. The retriever's settings record its kind (dense, learned-sparse,
  multi-vector, BM25's sparse, ...): one checkpoint read as two kinds is two systems with two ranks, never one
  entry (docs/model-kinds.md; tests/results/test_kind_identity.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mtrbench.leaderboard.entries import RUN, EntryLike, as_entry
from mtrbench.results.labels import canonical
from mtrbench.results.settings import DEFAULT_PROTOCOL, RETRIEVER_EXECUTION_KEYS, without_keys

COMPARABILITY_SETTINGS = ("history", "truncate", "query_format")
# Comparability keys written in a group only when an entry's value is not the default (older leaderboards
# stay byte-identical): a run scored at another relevance level or cut at another depth ranks apart.
COMPARED_UNLESS_DEFAULT = {"top_k": 100, "relevance_level": 1}

# How the leaderboard reads every identity field of a result's settings (results/settings.py ResultSettings);
# tests/leaderboard/test_result_identity.py fails when a field is added there and not here.
SETTINGS_READ = {
    "history": "comparability",
    "truncate": "comparability",
    "query_format": "comparability",
    "top_k": "comparability unless default",
    "relevance_level": "comparability unless default",
    "limit": "comparability when set",
    "protocol": "comparability unless trec_eval",
    "ptkb": "comparability when set",
    "split": "the dataset layer of a group (results/settings.py records the split evaluated)",
    "k_values": "which scores an entry carries (no score changes)",
    "metrics": "which scores an entry carries (no score changes)",
    "retriever": "system",
    "pipeline": "system (in the entry's settings when set)",
    "rewriter": "system (in the entry's settings when set)",
    "rewriter_run": "execution: not read",
    "other": "system (unknown keys stay in the entry's settings)",
}
# User objects (mtrbench.evaluate): with no max length recorded, nothing says they do not cut long queries
# themselves (a wrapped sentence-transformers model does), so their recorded truncation groups them.
OBJECT_KINDS = frozenset({"encoder", "conversation-encoder", "search-object"})


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
    for key, default in COMPARED_UNLESS_DEFAULT.items():
        if settings.get(key) not in (None, default):
            keys[key] = settings[key]
    return keys


def _retriever_kinds(settings: object) -> set[str]:
    """Every ``kind`` in a retriever's settings, nested ones (hybrid legs, a chunked retriever's children) too."""
    if not isinstance(settings, Mapping):
        return set()
    kinds = {settings["kind"]} if isinstance(settings.get("kind"), str) else set()
    for value in settings.values():
        kinds |= _retriever_kinds(value)
    return kinds


def truncation_free(entry: EntryLike) -> bool:
    """A run whose retriever has no token limit (BM25): no truncation policy can change its scores. A model
    object without a recorded max length is not one (it may cut long queries itself): its truncation groups it."""
    typed = as_entry(entry)
    return (
        typed.label == RUN
        and typed.settings.get("max_length") is None
        and typed.settings.get("truncate") in ("none", None)
        and not _retriever_kinds(typed.settings.get("retriever")) & OBJECT_KINDS
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
