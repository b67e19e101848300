"""Turn `mtrbench eval` result files (and existing leaderboards) into leaderboard entries."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtrbench.results.result import main_score_key
from mtrbench.infra.errors import MtrbenchError
from mtrbench.results.documents import find_inputs, kind_of, read_json
from mtrbench.results.labels import short_model
from mtrbench.results.writer import result_paths, safe_name

# mteb's per-split score block carries these beside the metrics.
NOT_METRICS = ("hf_subset", "languages", "main_score")
# Options of `mtrbench eval` that change where results go or how much is printed, never a score.
PLACE_ONLY_OPTIONS = {"--output-dir": True, "--quiet": False}  # option -> takes a value


@dataclass
class SourcedEntry:
    entry: dict[str, Any]
    origin: str  # the file it came from (and the entry id, for leaderboards)


def normalize_command(command: str | None) -> str | None:
    """The command without options that only choose where results go or how much is printed."""
    if not command:
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    kept, skip_next = [], False
    for word in words:
        if skip_next:
            skip_next = False
            continue
        name = word.split("=", 1)[0]
        if name in PLACE_ONLY_OPTIONS:
            skip_next = PLACE_ONLY_OPTIONS[name] and "=" not in word
            continue
        kept.append(word)
    return shlex.join(kept)


def entry_from_result(path: Path, document: dict[str, Any]) -> dict[str, Any]:
    meta = document["mtrbench"]
    try:
        settings = meta["settings"]
        split = settings.get("split") or next(iter(document["scores"]))
        block = document["scores"][split][0]
        scores = {k: float(v) for k, v in block.items()
                  if k not in NOT_METRICS and isinstance(v, (int, float)) and not isinstance(v, bool)}
        task = document["task_name"]
        model, revision = meta["model"]["name"], meta["model"].get("revision")
        retriever = dict(settings.get("retriever") or {})
        main = main_score_key(task, block, scores)
    except (KeyError, IndexError, TypeError, StopIteration) as exc:
        raise MtrbenchError(f"{path}: incomplete mtrbench result ({type(exc).__name__}: {exc})") from None
    except MtrbenchError as exc:
        raise MtrbenchError(f"{path}: {exc}") from None
    timings = meta.get("timings_s") or {}
    wall_time = round(sum(timings.values()), 3) if timings else document.get("evaluation_time")
    requested = meta["model"].get("requested") or model
    from mtrbench.retrieve.registry import REGISTRY

    nickname = requested if requested in REGISTRY else short_model(model)
    history = settings.get("history")
    layout = result_paths(Path("."), model, revision or "no_revision", task, meta.get("experiment")).json
    return {
        "id": safe_name(f"{nickname}__{task}__{history}"),
        "label": "run",
        "model": model,
        "model_revision": revision,
        "task": task,
        "split": split,
        "dataset_revision": document.get("dataset_revision"),
        "main_score": main,
        "scores": scores,
        "settings": {
            "history": history,
            "truncate": settings.get("truncate"),
            "max_length": retriever.pop("max_length", None),
            "top_k": settings.get("top_k"),
            "query_format": settings.get("query_format"),
            "relevance_level": settings.get("relevance_level"),
            "retriever": retriever,
            **({"limit": settings["limit"]} if settings.get("limit") is not None else {}),
        },
        "harness": {"name": "mtrbench", "version": meta.get("version")},
        "date": meta.get("date"),
        "hardware": meta.get("hardware"),
        "wall_time_s": wall_time,
        "command": normalize_command(meta.get("command")),
        "source": {"result_file": str(path), "result_path": layout.as_posix(), "experiment": meta.get("experiment")},
    }


def load_result_entry(path: Path) -> SourcedEntry:
    document = read_json(path)
    if kind_of(document) != "result":
        raise MtrbenchError(f"{path}: not an `mtrbench eval` result")
    return SourcedEntry(entry_from_result(path, document), str(path))


def load_leaderboard_entries(path: Path) -> list[SourcedEntry]:
    from mtrbench.leaderboard.schema import validate

    document = read_json(path)
    validate(document, str(path))
    return [SourcedEntry(entry, f"{path} (entry {entry['id']})") for entry in document["entries"]]


def results_in(folder: Path) -> list[SourcedEntry]:
    """Every result under ``folder`` as an entry (for verify and plot)."""
    return [load_result_entry(p) for p in find_inputs([folder]).results] if folder.is_dir() else []
