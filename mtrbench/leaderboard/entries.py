"""Leaderboard entries, typed, and how `mtrbench eval` result files (and existing leaderboards) become entries."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from mtrbench.infra.errors import DataError, MtrbenchError
from mtrbench.leaderboard.schema import validate
from mtrbench.results.documents import find_inputs, read_json
from mtrbench.results.labels import short_model
from mtrbench.results.result import Result
from mtrbench.results.settings import DEFAULT_PROTOCOL, ResultSettings
from mtrbench.results.writer import result_paths, safe_name
from mtrbench.retrieve.registry import REGISTRY

# Options of `mtrbench eval` that change where results go or how much is printed, never a score.
PLACE_ONLY_OPTIONS = {"--output-dir": True, "--quiet": False}  # option -> takes a value


RUN, REPORTED = "run", "reported"


@dataclass(frozen=True)
class LeaderboardEntry:
    """One entry of a leaderboard (``leaderboards/schema.json``): a run made by mtrbench or a number reported in a
    paper. Its JSON is written back exactly as read, in the schema's key order."""

    id: str
    label: str  # RUN or REPORTED
    model: str
    model_revision: str | None
    task: str
    split: str | None
    dataset_revision: str | None
    main_score: str
    scores: Mapping[str, float]
    # every setting that changes scores; history and truncate always (null when unknown), free-form for a paper's
    settings: Mapping[str, Any]
    harness: Mapping[str, Any]  # name and version of what made the numbers
    date: str | None
    hardware: Mapping[str, Any] | None
    wall_time_s: float | None
    command: str | None
    source: Mapping[str, Any]  # a run: its result file and experiment; a paper: citation, table, row, ...

    @classmethod
    def from_json(cls, entry: Mapping[str, Any]) -> LeaderboardEntry:
        """An entry as written (a leaderboard file is checked against the schema first). A key it lacks reads as
        null, or empty for the objects, so a partial entry (its settings only, say) can still be compared."""
        return cls(**{f.name: entry.get(f.name, {} if f.name in _OBJECTS else None) for f in fields(cls)})

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def is_reported(self) -> bool:
        return self.label == REPORTED

    @property
    def history(self) -> str | None:
        return self.settings.get("history")

    @property
    def experiment(self) -> str | None:
        """A run's experiment folder name (None for default settings and for reported numbers)."""
        return self.source.get("experiment") if self.label == RUN else None

    def with_id(self, entry_id: str) -> LeaderboardEntry:
        return replace(self, id=entry_id)


_OBJECTS = frozenset({"scores", "settings", "harness", "source"})
# An entry typed, or as written in a leaderboard file (any JSON object with its keys: a partial one, or a result's
# ``mtrbench`` block, which records ``settings`` too).
EntryLike = LeaderboardEntry | Mapping[str, Any]


def as_entry(entry: EntryLike) -> LeaderboardEntry:
    return entry if isinstance(entry, LeaderboardEntry) else LeaderboardEntry.from_json(entry)


@dataclass
class SourcedEntry:
    entry: LeaderboardEntry
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
    """The leaderboard entry of one result as written (:func:`result_entry`'s JSON)."""
    return result_entry(path, document).to_json()


def result_entry(path: Path, document: Result | dict[str, object]) -> LeaderboardEntry:
    """The leaderboard entry of one result (a loaded :class:`Result`, or a document read from ``path``)."""
    result = document if isinstance(document, Result) else Result(document, path)
    try:
        if not result.has_settings:
            raise KeyError("settings")
        settings = result.result_settings
        split, scores, task = result.split, result.scores, result.task_name
        model, revision = result.model_name, result.model_revision
        requested = result.requested_model
        main = result.main_score_key
        # queries its rewriter failed on are not in its means: ranked only with results missing as many
        left_out = int((result.meta.get("queries") or {}).get("excluded_rewriter_failed") or 0)
        entry_settings = leaderboard_settings(settings, left_out)
    except (KeyError, IndexError, TypeError, StopIteration, AttributeError) as exc:
        raise DataError(f"{path}: incomplete mtrbench result ({type(exc).__name__}: {exc})") from None
    except MtrbenchError as exc:
        message = str(exc)
        raise DataError(message if message.startswith(f"{path}: ") else f"{path}: {message}") from None
    timings = result.timings
    wall_time = round(sum(timings.values()), 3) if timings else result.evaluation_time
    nickname = requested if requested in REGISTRY else short_model(model)
    layout = result_paths(Path("."), model, revision or "no_revision", task, result.experiment).json
    return LeaderboardEntry(
        id=safe_name(f"{nickname}__{task}__{settings.history}"),
        label=RUN,
        model=model,
        model_revision=revision,
        task=task,
        split=split,
        dataset_revision=result.dataset_revision,
        main_score=main,
        scores=scores,
        settings=entry_settings,
        harness={"name": "mtrbench", "version": result.mtrbench_version},
        date=result.date,
        hardware=result.hardware,
        wall_time_s=wall_time,
        command=normalize_command(result.command),
        source={"result_file": str(path), "result_path": layout.as_posix(), "experiment": result.experiment},
    )


def leaderboard_settings(settings: ResultSettings, queries_left_out: int = 0) -> dict[str, Any]:
    """What a run's entry records of its result's settings: the retriever's max length beside the history and
    truncation; the conversation limit, a protocol other than trec_eval and the queries left out only when set."""
    retriever = dict(settings.retriever or {})
    return {
        "history": settings.history,
        "truncate": settings.truncate,
        "max_length": retriever.pop("max_length", None),
        "top_k": settings.top_k,
        "query_format": settings.query_format,
        "relevance_level": settings.relevance_level,
        "retriever": retriever,
        **({"pipeline": settings.pipeline} if settings.pipeline is not None else {}),
        **({"rewriter": settings.rewriter} if settings.rewriter is not None else {}),
        **({"limit": settings["limit"]} if settings.limit is not None else {}),
        **({"protocol": settings.protocol} if settings.scoring_protocol != DEFAULT_PROTOCOL else {}),
        **({"ptkb": settings.ptkb} if settings.ptkb else {}),
        **({"queries_left_out": queries_left_out} if queries_left_out else {}),
    }


def load_result_entry(path: Path) -> SourcedEntry:
    result = Result.load(path)
    return SourcedEntry(result_entry(path, result), str(path))


def load_leaderboard_entries(path: Path) -> list[SourcedEntry]:
    document = read_json(path)
    validate(document, str(path))
    entries = [LeaderboardEntry.from_json(entry) for entry in document["entries"]]
    return [SourcedEntry(entry, f"{path} (entry {entry.id})") for entry in entries]


def results_in(folder: Path) -> list[SourcedEntry]:
    """Every result under ``folder`` as an entry (for verify and plot)."""
    return [load_result_entry(p) for p in find_inputs([folder]).results] if folder.is_dir() else []
