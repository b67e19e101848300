"""TREC iKAT 2024's gold nuggets and participant responses, in the layout irlabamsterdam/CONE-RAG publishes them.

Gold nuggets (``gold_nuggets_human.json``): ``{TURN_ID: {"[N]": {"text": TEXT, "relevance": "G"}, ...}, ...}``,
turn ids ``TOPIC_TURN``, each nugget with the relevance grade (a string of digits, 1-4 in the release) that the
assessors gave it. Nugget evaluation needs a vital/okay split: a nugget graded ``vital_grade`` or higher is vital,
the others okay (iKAT's own nugget recall weighs every nugget alike: mtrbench's ``all`` and ``strict_all`` scores).

Responses (``automatic_responses.json``, ``manual_responses.json``): ``{TURN_ID: {RUN_ID: RESPONSE_TEXT, ...}}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from mtrbench.infra.errors import DataError
from mtrbench.judge.nuggets.labels import OKAY, VITAL
from mtrbench.judge.nuggets.nugget_file import Nugget, NuggetSet, refuse_repeated_nuggets

DEFAULT_VITAL_GRADE = 3


def _json_object(path: Path, kind: str) -> Mapping[str, object]:
    if not path.is_file():
        raise DataError(f"{kind} file {path} does not exist")
    try:
        value = json.loads(path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {exc.start + 1}: {exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    if not isinstance(value, dict):
        raise DataError(f"{path}: must be a JSON object keyed by turn id, got {type(value).__name__}")
    return value


def _grade(raw: Mapping[str, object], where: str) -> int:
    grade = raw.get("relevance")
    # ASCII digits only: str.isdigit() also takes "²" or "٣", which int() refuses or reads as another number
    if isinstance(grade, str) and re.fullmatch(r"[0-9]+", grade.strip()):
        return int(grade)
    if isinstance(grade, int) and not isinstance(grade, bool):
        return grade
    raise DataError(f"{where}: 'relevance' must be a grade (digits), got {grade!r}")


def _nugget(raw: object, where: str, vital_grade: int) -> Nugget:
    if not isinstance(raw, dict):
        raise DataError(f"{where}: a nugget must be an object with 'text' and 'relevance'")
    text = raw.get("text")
    if not isinstance(text, str) or not text.strip():
        raise DataError(f"{where}: a nugget needs a non-empty 'text'")
    return Nugget(text.strip(), VITAL if _grade(raw, where) >= vital_grade else OKAY)


def read_ikat_nuggets(path: str | Path, vital_grade: int = DEFAULT_VITAL_GRADE) -> dict[str, NuggetSet]:
    """turn id -> its gold nuggets (in file order), vital when graded ``vital_grade`` or higher."""
    path = Path(path)
    out: dict[str, NuggetSet] = {}
    for turn, nuggets in _json_object(path, "iKAT nugget").items():
        where = f"{path}: turn {turn}"
        if not isinstance(nuggets, dict):
            raise DataError(f"{where}: must be an object of nuggets keyed '[N]'")
        made = tuple(_nugget(raw, f"{where} nugget {key}", vital_grade) for key, raw in nuggets.items())
        refuse_repeated_nuggets([(str(key), nugget.text) for key, nugget in zip(nuggets, made)], where)
        out[str(turn)] = NuggetSet(str(turn), "", made)
    if not out:
        raise DataError(f"iKAT nugget file {path} holds no turn")
    return out


def read_ikat_responses(path: str | Path) -> dict[str, dict[str, str]]:
    """run id -> turn id -> response text."""
    path = Path(path)
    runs: dict[str, dict[str, str]] = {}
    for turn, by_run in _json_object(path, "iKAT response").items():
        if not isinstance(by_run, dict):
            raise DataError(f"{path}: turn {turn}: must be an object of responses keyed by run id")
        for run_id, text in by_run.items():
            if not isinstance(text, str):
                raise DataError(f"{path}: turn {turn} run {run_id}: the response must be a string")
            runs.setdefault(str(run_id), {})[str(turn)] = text
    if not runs:
        raise DataError(f"iKAT response file {path} holds no response")
    return runs
