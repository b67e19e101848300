"""Find, load and validate leaderboard JSON files against ``leaderboards/schema.json``.

JSON Schema checks the shape; a few cross-field rules it cannot express (unique entry ids, the main
score among the scores, groups naming existing entries) are checked here too.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from mtrbench.infra.errors import MtrbenchError, closest
from mtrbench.infra.numeric import finite_tree

SCHEMA_FILE = "schema.json"
# Files in the leaderboards folder that are not leaderboards.
NOT_LEADERBOARDS = {SCHEMA_FILE}


def leaderboards_dir() -> Path:
    """The shipped leaderboards: the installed ``mtrbench.leaderboards`` package, else this checkout's folder."""
    try:
        from importlib import resources

        folder = Path(str(resources.files("mtrbench.leaderboards")))
        if (folder / SCHEMA_FILE).is_file():
            return folder
    except ModuleNotFoundError:  # an editable install made before the package was declared
        pass
    return Path(__file__).resolve().parents[2] / "leaderboards"


@lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    path = leaderboards_dir() / SCHEMA_FILE
    return json.loads(path.read_text(encoding="utf-8"))


def available_names() -> list[str]:
    folders = [Path("leaderboards"), leaderboards_dir()]
    return sorted({p.stem for f in folders if f.is_dir() for p in f.glob("*.json") if p.name not in NOT_LEADERBOARDS})


def resolve(name_or_path: str) -> Path:
    """A path to an existing file, or NAME for leaderboards/NAME.json (here, then the shipped ones)."""
    path = Path(name_or_path).expanduser()
    if path.is_file():
        return path
    if path.suffix != ".json" and "/" not in name_or_path:
        for folder in (Path("leaderboards"), leaderboards_dir()):
            candidate = folder / f"{name_or_path}.json"
            if candidate.is_file():
                return candidate
    names = available_names()
    raise MtrbenchError(
        f"no leaderboard '{name_or_path}' (not a file, nor leaderboards/{name_or_path}.json)."
        f"{closest(name_or_path, names)} Known: {', '.join(names) or 'none'}"
    )


def _location(error) -> str:
    parts = [str(p) for p in error.absolute_path]
    return "/".join(parts) if parts else "(top level)"


def validate(document: Any, origin: str = "leaderboard") -> None:
    """Raise MtrbenchError naming the first problem(s) found in ``document``."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(load_schema())
    errors = sorted(validator.iter_errors(document), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    problems = [f"{_location(e)}: {_short(e)}" for e in errors]
    if not problems:
        problems = _cross_field_problems(document)
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise MtrbenchError(f"{origin}: not a valid leaderboard: {'; '.join(problems[:3])}{more}")


def _short(error) -> str:
    message = error.message
    return message if len(message) <= 160 else message[:157] + "..."


def _cross_field_problems(document: dict[str, Any]) -> list[str]:
    problems = []
    seen: dict[str, int] = {}
    for n, entry in enumerate(document["entries"]):
        if entry["id"] in seen:
            problems.append(f"entries/{n}: duplicate id '{entry['id']}' (also entries/{seen[entry['id']]})")
        seen.setdefault(entry["id"], n)
        if entry["main_score"] not in entry["scores"]:
            problems.append(f"entries/{n} ({entry['id']}): main_score '{entry['main_score']}' is not among its scores")
    for n, group in enumerate(document.get("groups", [])):
        for entry_id in group["entries"]:
            if entry_id not in seen:
                problems.append(f"groups/{n}: names unknown entry '{entry_id}'")
        for task, ranks in group["ranks"].items():
            for entry_id in ranks:
                if entry_id not in group["entries"]:
                    problems.append(f"groups/{n}: rank for '{entry_id}' on {task}, which is not in the group")
    return problems


def load(name_or_path: str) -> tuple[Path, dict[str, Any]]:
    """Resolve, read and validate a leaderboard."""
    path = resolve(name_or_path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise MtrbenchError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    finite_tree(document, str(path))
    validate(document, str(path))
    return path, document
