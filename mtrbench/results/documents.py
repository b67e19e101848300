"""The JSON documents mtrbench writes (``eval`` results and leaderboards): reading one, telling which
it is, and finding them among files and folders."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.infra.errors import DataError, MtrbenchError
from mtrbench.infra.numeric import finite_tree


@dataclass
class Inputs:
    results: list[Path] = field(default_factory=list)
    leaderboards: list[Path] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)  # JSON found in folders that is neither


def read_json(path: Path) -> Any:
    """A result, leaderboard or ``score --output`` document; NaN or an infinity anywhere in it is an error
    naming its JSON path (a NaN score would rank, average and verify as if it were a number)."""
    document = _parse_json(path)
    finite_tree(document, str(path))
    return document


def _parse_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except UnicodeDecodeError:
        raise DataError(f"{path}: not valid JSON (not UTF-8 text)") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror})") from None


def read_per_query_rows(result: Path, document: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of the per-query file beside an ``eval`` result (qid, conversation_id, turn_id, metrics).

    The low-level reader behind :attr:`mtrbench.results.result.Result.per_query` (use that). Only a plain file
    name recorded in the result is followed, and only beside the result itself.
    """
    meta = document.get("mtrbench")
    files = meta.get("files") if isinstance(meta, dict) else None
    name = files.get("per_query") if isinstance(files, dict) else None
    if not isinstance(name, str) or not name or Path(name).name != name:
        raise DataError(f"{result}: no per-query file recorded beside it")
    path = Path(result).with_name(name)
    if not path.is_file():
        raise DataError(f"{result}: its per-query file {path} is missing")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                raise DataError(f"{path}:{n}: not valid JSON") from None
            if not isinstance(row, dict):
                raise DataError(f"{path}:{n}: not a JSON object")
            finite_tree(row, f"{path}:{n}")
            rows.append(row)
    return rows


def kind_of(document: Any) -> str | None:
    if isinstance(document, dict):
        if "schema_version" in document and "entries" in document:
            return "leaderboard"
        if isinstance(document.get("mtrbench"), dict) and "task_name" in document and "scores" in document:
            return "result"
    return None


def find_inputs(paths: list[str | Path]) -> Inputs:
    """Result and leaderboard JSON files among ``paths``; folders are searched recursively.

    Only ``*.json`` files are read in folders (runs and per-query JSONL files beside results are not);
    other JSON found there (``score --output`` files, comparisons) is skipped and counted.
    """
    inputs = Inputs()
    seen: set[Path] = set()
    for given in paths:
        path = Path(given)
        if path.is_dir():
            # model_meta.json files sit beside results for mteb's cache: known, never an input
            candidates = sorted(
                p for p in path.rglob("*.json") if not p.name.startswith(".") and p.name != "model_meta.json"
            )
            explicit = False
        elif path.is_file():
            candidates, explicit = [path], True
        else:
            raise MtrbenchError(f"{path}: no such result file, leaderboard or folder")
        for candidate in candidates:
            resolved = candidate.resolve()
            if resolved in seen:
                continue
            seen.add(resolved)
            kind = kind_of(_parse_json(candidate))  # only classified here: its reader checks the numbers
            if kind == "result":
                inputs.results.append(candidate)
            elif kind == "leaderboard":
                inputs.leaderboards.append(candidate)
            elif explicit:
                raise DataError(f"{candidate}: neither an `mtrbench eval` result nor a leaderboard")
            else:
                inputs.skipped.append(candidate)
    return inputs
