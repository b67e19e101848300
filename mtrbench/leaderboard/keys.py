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

from typing import Any

from mtrbench.results.labels import canonical
from mtrbench.results.settings import RETRIEVER_EXECUTION_KEYS  # they change speed, never scores: not an identity

COMPARABILITY_SETTINGS = ("history", "truncate", "query_format")


def score_settings(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry's settings without those that only change how fast it ran."""
    settings = dict(entry["settings"])
    retriever = settings.get("retriever")
    if isinstance(retriever, dict):
        settings["retriever"] = {k: v for k, v in retriever.items() if k not in RETRIEVER_EXECUTION_KEYS}
    return settings


def reported_in(entry: dict[str, Any]) -> str | None:
    if entry["label"] != "reported":
        return None
    source = entry["source"]
    return ", ".join(str(p) for p in (source.get("citation"), source.get("table")) if p)


def identity(entry: dict[str, Any]) -> str:
    parts: dict[str, Any] = {
        k: entry[k] for k in ("label", "model", "model_revision", "task", "split", "dataset_revision")
    }
    parts["settings"] = score_settings(entry)
    if entry["label"] == "reported":
        parts["reported"] = [entry["source"].get(k) for k in ("citation", "table", "row")]
    return canonical(parts)


def comparability(entry: dict[str, Any]) -> dict[str, Any]:
    settings = entry["settings"]
    keys = {
        "label": entry["label"],
        "history": settings.get("history"),
        "truncate": settings.get("truncate"),
        "query_format": settings.get("query_format"),
        "reported_in": reported_in(entry),
    }
    if settings.get("limit") is not None:  # a run on the first N conversations is ranked only with its like
        keys["limit"] = settings["limit"]
    if settings.get("protocol", "trec_eval") != "trec_eval":  # an official protocol's numbers rank apart
        keys["protocol"] = settings["protocol"]
    if settings.get("queries_left_out"):  # a mean over fewer queries (its rewriter failed on some) ranks apart
        keys["queries_left_out"] = settings["queries_left_out"]
    return keys


def truncation_free(entry: dict[str, Any]) -> bool:
    """A run whose retriever has no token limit (BM25): no truncation policy can change its scores."""
    return (
        entry["label"] == "run"
        and entry["settings"].get("max_length") is None
        and entry["settings"].get("truncate") in ("none", None)
    )


def system_settings(entry: dict[str, Any]) -> dict[str, Any]:
    settings = {k: v for k, v in score_settings(entry).items() if k not in COMPARABILITY_SETTINGS}
    if entry["label"] == "reported" and entry["source"].get("row"):
        settings["row"] = entry["source"]["row"]
    return settings


def system_identity(entry: dict[str, Any]) -> str:
    return canonical([entry["model"], entry["model_revision"], system_settings(entry)])


def flatten(settings: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"retriever": {"dtype": "fp32"}}`` -> ``{"retriever.dtype": "fp32"}``."""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
