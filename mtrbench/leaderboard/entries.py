"""Turn `mtrbench eval` result files (and existing leaderboards) into leaderboard entries."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtrbench.infra.errors import DataError, MtrbenchError
from mtrbench.results.documents import find_inputs, read_json
from mtrbench.results.labels import short_model
from mtrbench.results.result import Result
from mtrbench.results.writer import result_paths, safe_name

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


def entry_from_result(path: Path, document: Result | dict[str, object]) -> dict[str, Any]:
    """The leaderboard entry of one result (a loaded :class:`Result`, or a document read from ``path``)."""
    result = document if isinstance(document, Result) else Result(document, path)
    try:
        if not result.has_settings:
            raise KeyError("settings")
        settings = result.settings
        split = result.split
        scores = result.scores
        task = result.task_name
        model, revision = result.model_name, result.model_revision
        requested = result.requested_model
        retriever = dict(settings.get("retriever") or {})
        main = result.main_score_key
    except (KeyError, IndexError, TypeError, StopIteration, AttributeError) as exc:
        raise DataError(f"{path}: incomplete mtrbench result ({type(exc).__name__}: {exc})") from None
    except MtrbenchError as exc:
        message = str(exc)
        raise DataError(message if message.startswith(f"{path}: ") else f"{path}: {message}") from None
    # queries its rewriter failed on are not in its means: ranked only with results missing as many
    left_out = int((result.meta.get("queries") or {}).get("excluded_rewriter_failed") or 0)
    timings = result.timings
    wall_time = round(sum(timings.values()), 3) if timings else result.evaluation_time
    from mtrbench.retrieve.registry import REGISTRY

    nickname = requested if requested in REGISTRY else short_model(model)
    history = settings.get("history")
    layout = result_paths(Path("."), model, revision or "no_revision", task, result.experiment).json
    return {
        "id": safe_name(f"{nickname}__{task}__{history}"),
        "label": "run",
        "model": model,
        "model_revision": revision,
        "task": task,
        "split": split,
        "dataset_revision": result.dataset_revision,
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
            **({"protocol": settings["protocol"]} if settings.get("protocol", "trec_eval") != "trec_eval" else {}),
            **({"queries_left_out": left_out} if left_out else {}),
        },
        "harness": {"name": "mtrbench", "version": result.mtrbench_version},
        "date": result.date,
        "hardware": result.hardware,
        "wall_time_s": wall_time,
        "command": normalize_command(result.command),
        "source": {"result_file": str(path), "result_path": layout.as_posix(), "experiment": result.experiment},
    }


def load_result_entry(path: Path) -> SourcedEntry:
    result = Result.load(path)
    return SourcedEntry(entry_from_result(path, result), str(path))


def load_leaderboard_entries(path: Path) -> list[SourcedEntry]:
    from mtrbench.leaderboard.schema import validate

    document = read_json(path)
    validate(document, str(path))
    return [SourcedEntry(entry, f"{path} (entry {entry['id']})") for entry in document["entries"]]


def results_in(folder: Path) -> list[SourcedEntry]:
    """Every result under ``folder`` as an entry (for verify and plot)."""
    return [load_result_entry(p) for p in find_inputs([folder]).results] if folder.is_dir() else []
