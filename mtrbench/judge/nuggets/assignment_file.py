"""nuggetizer's assignment JSONL: one record per answer of one run, each nugget labelled.

``{"query", "qid", "answer_text", "response_length", "run_id", "nuggets": [{"text", "importance", "assignment"}]}``
as nuggetizer's ``assign`` writes it (``json.dumps`` defaults, one record a line) and its ``metrics`` reads it (only
``qid`` and each nugget's ``importance`` and ``assignment`` are needed). A file holds one run: its ``run_id`` (the
records', else the file's stem, as nuggetizer names a run after its answer file) names the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mtrbench.formats.lines import jsonl_records
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import DataError
from mtrbench.infra.numeric import json_lines
from mtrbench.judge.nuggets.labels import ASSIGNMENTS, VITAL
from mtrbench.judge.nuggets.nugget_file import (
    importance_of,
    nugget_text,
    nuggets_of,
    record_id,
    refuse_repeated_nuggets,
)


@dataclass(frozen=True)
class AssignedNugget:
    text: str
    importance: str
    assignment: str

    @property
    def vital(self) -> bool:
        return self.importance == VITAL


@dataclass(frozen=True)
class AnswerAssignment:
    """One answer (a run's answer to one turn) and the label of each nugget of that turn."""

    qid: str
    nuggets: tuple[AssignedNugget, ...]
    query: str = ""
    answer_text: str = ""
    response_length: int = 0
    run_id: str = ""
    line: int = 0  # where it was read (0: made here), for messages


@dataclass(frozen=True)
class RunAssignments:
    """One assignment file: a run's answers, by qid in file order."""

    run_id: str
    path: Path | None
    answers: dict[str, AnswerAssignment]

    def where(self, qid: str) -> str:
        line = self.answers[qid].line if qid in self.answers else 0
        return f"{self.path}:{line}" if self.path is not None and line else f"run {self.run_id}"


def _assignment(raw: Mapping[str, object], where: str) -> str:
    value = raw.get("assignment")
    if value not in ASSIGNMENTS:
        raise DataError(f"{where}: assignment {value!r} is not one of {', '.join(ASSIGNMENTS)}")
    return str(value)


def _text_field(raw: Mapping[str, object], name: str, where: str) -> str:
    value = raw.get(name, "")
    if not isinstance(value, str):
        raise DataError(f"{where}: '{name}' must be a string")
    return value


def answer_from_record(raw: Mapping[str, object], where: str, line: int = 0) -> AnswerAssignment:
    qid = record_id(raw.get("qid"), where, "qid")
    where = f"{where} (qid {qid})"
    nuggets = []
    for n, item in enumerate(nuggets_of(raw, where), 1):
        at = f"{where} nugget {n}"
        if "importance" not in item:
            raise DataError(f"{at}: needs 'importance' (vital or okay)")
        nuggets.append(AssignedNugget(nugget_text(item, at), importance_of(item, at), _assignment(item, at)))
    refuse_repeated_nuggets([(str(n), nugget.text) for n, nugget in enumerate(nuggets, 1)], where)
    length = raw.get("response_length", 0)
    if isinstance(length, bool) or not isinstance(length, int):
        raise DataError(f"{where}: 'response_length' must be an integer")
    run_id = raw.get("run_id", "")
    return AnswerAssignment(
        qid=qid,
        nuggets=tuple(nuggets),
        query=_text_field(raw, "query", where),
        answer_text=_text_field(raw, "answer_text", where),
        response_length=length,
        run_id=record_id(run_id, where, "run_id") if run_id != "" else "",
        line=line,
    )


def read_assignment_file(path: str | Path) -> RunAssignments:
    """One run's assignments; a bad record, an answer given twice or two run ids in one file is one error naming
    the file and line."""
    path = Path(path)
    answers: dict[str, AnswerAssignment] = {}
    run_id = ""
    for index, raw in jsonl_records(path, "assignment"):
        where = f"{path}:{index + 1}"
        answer = answer_from_record(raw, where, index + 1)
        if answer.qid in answers:
            raise DataError(f"{where}: turn '{answer.qid}' is assigned a second time; one answer per turn and run")
        if answer.run_id and run_id and answer.run_id != run_id:
            raise DataError(f"{where}: run '{answer.run_id}' after run '{run_id}'; one run per assignment file")
        run_id = run_id or answer.run_id
        answers[answer.qid] = answer
    if not answers:
        raise DataError(f"assignment file {path} holds no record")
    return RunAssignments(run_id or path.stem, path, answers)


def answer_record(answer: AnswerAssignment) -> dict[str, object]:
    return {
        "query": answer.query,
        "qid": answer.qid,
        "answer_text": answer.answer_text,
        "response_length": answer.response_length,
        "run_id": answer.run_id,
        "nuggets": [{"text": n.text, "importance": n.importance, "assignment": n.assignment} for n in answer.nuggets],
    }


def write_assignment_file(path: str | Path, answers: Iterable[AnswerAssignment]) -> None:
    """As nuggetizer writes it: ``json.dumps`` with its defaults, one record a line."""
    atomic_write_text(path, json_lines((answer_record(a) for a in answers), path=path))
