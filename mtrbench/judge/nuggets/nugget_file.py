"""nuggetizer's nugget JSONL: one record per turn (``create``'s output, ``assign``'s ``--nuggets`` input).

``{"query": TEXT, "qid": ID, "nuggets": [{"text": TEXT, "importance": "vital" | "okay"}, ...]}``; a nugget without
``importance`` is vital, as nuggetizer reads it; a turn listing one nugget twice is refused. mtrbench writes the
settings the nuggets were made under in one more key, ``mtrbench``, which nuggetizer does not read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mtrbench.formats.lines import jsonl_records
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import DataError
from mtrbench.infra.numeric import json_text
from mtrbench.judge.nuggets.labels import IMPORTANCES, VITAL

Setting = None | bool | int | float | str


@dataclass(frozen=True)
class Nugget:
    text: str
    importance: str = VITAL


@dataclass(frozen=True)
class NuggetSet:
    """The nuggets of one turn."""

    qid: str
    query: str
    nuggets: tuple[Nugget, ...]
    settings: Mapping[str, Setting] = field(default_factory=dict)  # how they were made (written under "mtrbench")

    def texts(self) -> list[str]:
        return [n.text for n in self.nuggets]


def record_id(value: object, where: str, name: str) -> str:
    """A record's id field (a string or an integer) as a string; anything else is an error naming the record."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value) == "":
        raise DataError(f"{where}: needs '{name}' (a string or an integer)")
    return str(value)


def nugget_text(raw: Mapping[str, object], where: str) -> str:
    text = raw.get("text")
    if not isinstance(text, str) or not text.strip():
        raise DataError(f"{where}: a nugget needs a non-empty 'text'")
    return text


def importance_of(raw: Mapping[str, object], where: str) -> str:
    importance = raw.get("importance", VITAL)
    if importance not in IMPORTANCES:
        raise DataError(f"{where}: importance {importance!r} is not one of {', '.join(IMPORTANCES)}")
    return str(importance)


def nuggets_of(raw: Mapping[str, object], where: str) -> list[Mapping[str, object]]:
    nuggets = raw.get("nuggets")
    if not isinstance(nuggets, list) or not all(isinstance(n, dict) for n in nuggets):
        raise DataError(f"{where}: 'nuggets' must be a list of objects")
    return nuggets


def refuse_repeated_nuggets(texts: Sequence[tuple[str, str]], where: str) -> None:
    """``texts``: (the nugget's name in messages, its text). A text given twice (spaces around it ignored) would be
    scored twice, over one nugget too many: one error naming both, never a silent second count."""
    first: dict[str, str] = {}
    for name, text in texts:
        key = text.strip()
        if key in first:
            raise DataError(f"{where} nugget {name}: {key!r} is listed twice (also nugget {first[key]}); list it once")
        first[key] = name


def nugget_set_from_record(raw: Mapping[str, object], where: str) -> NuggetSet:
    qid = record_id(raw.get("qid"), where, "qid")
    where = f"{where} (qid {qid})"
    query = raw.get("query", "")
    if not isinstance(query, str):
        raise DataError(f"{where}: 'query' must be a string")
    nuggets = []
    for n, item in enumerate(nuggets_of(raw, where), 1):
        at = f"{where} nugget {n}"
        nuggets.append(Nugget(nugget_text(item, at), importance_of(item, at)))
    refuse_repeated_nuggets([(str(n), nugget.text) for n, nugget in enumerate(nuggets, 1)], where)
    return NuggetSet(qid, query, tuple(nuggets))


def read_nugget_file(path: str | Path) -> dict[str, NuggetSet]:
    """qid -> its nuggets, in file order; a bad record or a turn given twice is one error naming file and line."""
    out: dict[str, NuggetSet] = {}
    for index, raw in jsonl_records(path, "nugget"):
        where = f"{path}:{index + 1}"
        nugget_set = nugget_set_from_record(raw, where)
        if nugget_set.qid in out:
            raise DataError(f"{where}: turn '{nugget_set.qid}' has a second nugget record; one per turn")
        out[nugget_set.qid] = nugget_set
    if not out:
        raise DataError(f"nugget file {path} holds no record")
    return out


def nugget_set_record(nugget_set: NuggetSet) -> dict[str, object]:
    record: dict[str, object] = {
        "query": nugget_set.query,
        "qid": nugget_set.qid,
        "nuggets": [{"text": n.text, "importance": n.importance} for n in nugget_set.nuggets],
    }
    if nugget_set.settings:
        record["mtrbench"] = dict(nugget_set.settings)
    return record


def write_nugget_file(path: str | Path, nugget_sets: Iterable[NuggetSet]) -> None:
    """As nuggetizer writes it: ``json.dumps`` with its defaults, one record a line."""
    lines = [json_text(nugget_set_record(s), path=f"{path}:{n}") for n, s in enumerate(nugget_sets, 1)]
    atomic_write_text(path, "".join(line + "\n" for line in lines))
