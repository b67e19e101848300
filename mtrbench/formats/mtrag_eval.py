"""MTRAGEval's files: generation tasks and predictions (JSON Lines), read, written and format-checked.

One record per task (a conversation turn)::

    {"task_id": "<conv>::<turn>", "conversation_id": ..., "Collection": "mt-rag-clapnq-elser-512-100-20240503",
     "input": [{"speaker": "user"|"agent", "text": ...}, ...],          # the conversation up to the question
     "contexts": [{"document_id": ..., "text": ..., "score": ..., "title": ...}, ...],
     "targets": [{"speaker": "agent", "text": ...}],                    # reference answer(s)
     "answerability": ["ANSWERABLE"|"PARTIAL"|"UNANSWERABLE"|"CONVERSATIONAL"|"UNDERSPECIFIED"],
     "predictions": [{"text": ...}]}                                     # the answer to score

The repository spells the collection both ``Collection`` (task inputs, MTRAG-UN) and ``collection``
(``mtrag-human`` generation tasks); both are read, ``Collection`` is written. Answerability is read from the
top-level ``answerability`` list (where the official ``get_idk_score`` reads it), else from the last user
turn's ``enrichments.answerability`` (``mtrag-human``), else from a top-level ``enrichments``. Every field
this module does not model is kept in ``extra`` and written back unchanged, so a file round-trips.

:func:`check_predictions` applies the rules of the official ``format_checker.py`` (modes
``retrieval_taska``, ``generation_taskb``, ``rag_taskc``) and returns one message per problem, each naming
the file and line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.formats.lines import read_lines
from mtrbench.formats.mtrag_modes import MODES
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.infra.numeric import finite, finite_tree

MAX_CONTEXTS = 10  # the official checker's limit on contexts per task
MAX_FILE_MB = 20  # the official checker's limit on a prediction file
ANSWERABILITY_CLASSES = ("ANSWERABLE", "PARTIAL", "UNANSWERABLE", "CONVERSATIONAL", "UNDERSPECIFIED")
_MODELLED = (
    "task_id",
    "conversation_id",
    "Collection",
    "collection",
    "input",
    "contexts",
    "targets",
    "answerability",
    "predictions",
)


@dataclass(frozen=True)
class Message:
    speaker: str  # "user" or "agent"
    text: str
    extra: dict[str, Any] = field(default_factory=dict, compare=False)  # metadata, enrichments


@dataclass(frozen=True)
class Context:
    document_id: str
    text: str = ""
    score: float | None = None
    title: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class MtragTask:
    """One generation task, with the prediction to score when the file is a prediction file."""

    task_id: str
    input: tuple[Message, ...]
    conversation_id: str = ""
    collection: str = ""
    contexts: tuple[Context, ...] = ()
    targets: tuple[Message, ...] = ()
    answerability: str | None = None
    predictions: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def prediction(self) -> str:
        """The answer the official scripts score: the first prediction's text."""
        if not self.predictions:
            raise DataError(f"task {self.task_id} has no prediction")
        return self.predictions[0]

    @property
    def conversation_text(self) -> str:
        """The conversation as the official judges show it: ``speaker: text`` lines."""
        return "\n".join(f"{m.speaker}: {m.text}" for m in self.input)


def _text(value: object, where: str, what: str) -> str:
    if not isinstance(value, str):
        raise DataError(f"{where}: {what} must be a string")
    return value


def _message(raw: object, where: str) -> Message:
    if not isinstance(raw, dict):
        raise DataError(f"{where}: a turn must be an object with 'speaker' and 'text'")
    extra = {k: v for k, v in raw.items() if k not in ("speaker", "text")}
    return Message(
        speaker=_text(raw.get("speaker", ""), where, "'speaker'"),
        text=_text(raw.get("text"), where, "'text'"),
        extra=extra,
    )


def _context(raw: object, where: str) -> Context:
    if not isinstance(raw, dict):
        raise DataError(f"{where}: a context must be an object with 'document_id'")
    score = raw.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
        raise DataError(f"{where}: a context's 'score' must be a number")
    if score is not None:
        finite(score, where, "'score'")
    extra = {k: v for k, v in raw.items() if k not in ("document_id", "text", "score", "title")}
    return Context(
        document_id=str(raw.get("document_id", "")),
        text=_text(raw.get("text", ""), where, "'text'"),
        score=None if score is None else float(score),
        title=str(raw.get("title") or ""),
        extra=extra,
    )


def _label(value: object) -> str | None:
    if isinstance(value, list):
        value = value[0] if value else None
    return value if isinstance(value, str) and value else None


def _answerability(raw: dict[str, Any]) -> str | None:
    label = _label(raw.get("answerability"))
    if label is None:
        users = [t for t in raw.get("input") or [] if isinstance(t, dict) and t.get("speaker") == "user"]
        enrichments = users[-1].get("enrichments") if users else None
        if isinstance(enrichments, dict):
            label = _label(enrichments.get("answerability"))
    if label is None and isinstance(raw.get("enrichments"), dict):
        label = _label(raw["enrichments"].get("answerability"))
    return label


def _list(raw: dict[str, Any], name: str, where: str) -> list[Any]:
    value = raw.get(name)
    if value is None or (isinstance(value, float) and math.isnan(value)):  # pandas writes a missing list as NaN
        return []
    if not isinstance(value, list):
        raise DataError(f"{where}: '{name}' must be a list")
    return value


def task_from_record(raw: object, where: str) -> MtragTask:
    if not isinstance(raw, dict):
        raise DataError(f"{where}: a task must be a JSON object")
    task_id = raw.get("task_id")
    if not isinstance(task_id, str) or not task_id:
        raise DataError(f"{where}: 'task_id' must be a non-empty string")
    predictions = []
    for i, p in enumerate(_list(raw, "predictions", where)):
        if not isinstance(p, dict) or not isinstance(p.get("text"), str):
            raise DataError(f"{where}: predictions[{i}] must be an object with a string 'text'")
        predictions.append(p["text"])
    return MtragTask(
        task_id=task_id,
        input=tuple(_message(m, f"{where} input[{i}]") for i, m in enumerate(_list(raw, "input", where))),
        conversation_id=str(raw.get("conversation_id") or ""),
        collection=str(raw.get("Collection") or raw.get("collection") or ""),
        contexts=tuple(_context(c, f"{where} contexts[{i}]") for i, c in enumerate(_list(raw, "contexts", where))),
        targets=tuple(_message(m, f"{where} targets[{i}]") for i, m in enumerate(_list(raw, "targets", where))),
        answerability=_answerability(raw),
        predictions=tuple(predictions),
        extra={k: v for k, v in raw.items() if k not in _MODELLED},
    )


def _records(path: Path) -> Iterable[tuple[str, object]]:
    for number, line in enumerate(read_lines(path, "MTRAGEval"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            yield where, json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{where}: not JSON ({exc.msg})") from None


def read_tasks(path: str | Path) -> list[MtragTask]:
    """Every task of a generation-task or prediction JSONL file; a malformed record names its line."""
    path = Path(path)
    tasks = [task_from_record(raw, where) for where, raw in _records(path)]
    seen: set[str] = set()
    for task in tasks:
        if task.task_id in seen:
            raise DataError(f"{path}: task_id '{task.task_id}' appears twice")
        seen.add(task.task_id)
    if not tasks:
        raise DataError(f"{path} holds no task")
    return tasks


def _message_record(m: Message) -> dict[str, Any]:
    return {"speaker": m.speaker, "text": m.text, **m.extra}


def _context_record(c: Context) -> dict[str, Any]:
    record: dict[str, Any] = {"document_id": c.document_id, "text": c.text}
    if c.title:
        record["title"] = c.title
    if c.score is not None:
        record["score"] = c.score
    return {**record, **c.extra}


def task_record(task: MtragTask) -> dict[str, Any]:
    """The JSON object of a task, in the official field names (``Collection``, ``predictions: [{text}]``)."""
    record: dict[str, Any] = {"task_id": task.task_id}
    if task.conversation_id:
        record["conversation_id"] = task.conversation_id
    if task.collection:
        record["Collection"] = task.collection
    record["input"] = [_message_record(m) for m in task.input]
    record["contexts"] = [_context_record(c) for c in task.contexts]
    if task.targets:
        record["targets"] = [_message_record(m) for m in task.targets]
    if task.answerability is not None and "answerability" not in task.extra:
        record["answerability"] = [task.answerability]
    record.update(task.extra)
    if task.predictions:
        record["predictions"] = [{"text": t} for t in task.predictions]
    return record


def write_tasks(path: str | Path, tasks: Sequence[MtragTask]) -> None:
    """The tasks as a prediction file. A record's own input fields (``task.extra``) are echoed as read, so a released
    file round-trips exactly (pandas's NaN for a missing list included); every value mtrbench made must be finite."""
    lines = []
    for number, task in enumerate(tasks, 1):
        record = task_record(task)
        finite_tree({name: value for name, value in record.items() if name not in task.extra}, f"{path}:{number}")
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    atomic_write_text(path, "".join(lines))


# -- the official format check ------------------------------------------------------------------------------

_REQUIRED = {
    "retrieval_taska": ("task_id", "Collection", "contexts"),
    "generation_taskb": ("task_id", "input", "contexts", "predictions"),
    "rag_taskc": ("task_id", "Collection", "input", "contexts", "predictions"),
}
_TYPES: dict[str, tuple[type, str]] = {
    "task_id": (str, "'task_id' must be a string"),
    "Collection": (str, "'Collection' must be a string"),
    "input": (list, "'input' must be a list of turns, each with 'speaker' and 'text'"),
    "contexts": (list, "'contexts' must be a list of objects, each with 'document_id' and 'score'"),
    "predictions": (list, "'predictions' must be a list of objects, each with 'text'"),
}


def _check_contexts(contexts: object, where: str) -> list[str]:
    if not isinstance(contexts, list):
        return []  # reported once by the field checks (the official checker reports it a second time)
    problems = []
    if len(contexts) > MAX_CONTEXTS:
        problems.append(f"{where}: {len(contexts)} contexts, at most {MAX_CONTEXTS} are allowed")
    for i, ctx in enumerate(contexts):
        if not isinstance(ctx, dict):
            problems.append(f"{where}: contexts[{i}] must be an object")
            continue
        if "document_id" not in ctx:
            problems.append(f"{where}: contexts[{i}] has no 'document_id'")
        elif not isinstance(ctx["document_id"], str):
            problems.append(f"{where}: contexts[{i}].document_id must be a string")
        if "score" not in ctx:
            problems.append(f"{where}: contexts[{i}] has no 'score'")
        elif not isinstance(ctx["score"], (int, float)):  # a JSON true passes, as in the official checker
            problems.append(f"{where}: contexts[{i}].score must be a number")
    return problems


def _check_predictions(predictions: object, where: str) -> list[str]:
    if not isinstance(predictions, list):
        return []
    problems = []
    for i, p in enumerate(predictions):
        if not isinstance(p, dict):
            problems.append(f"{where}: predictions[{i}] must be an object")
        elif "text" not in p:
            problems.append(f"{where}: predictions[{i}] has no 'text'")
        elif not isinstance(p["text"], str):
            problems.append(f"{where}: predictions[{i}].text must be a string")
    return problems


def check_record(item: object, where: str, mode: str) -> list[str]:
    """The official checker's problems with one parsed record, in its order."""
    if not isinstance(item, dict):
        return [f"{where}: a record must be a JSON object"]
    problems = [f"{where}: missing required field '{name}'" for name in _REQUIRED[mode] if name not in item]
    for name in _REQUIRED[mode]:
        kind, message = _TYPES[name]
        if name in item and not isinstance(item[name], kind):
            problems.append(f"{where}: {message}")
    problems += _check_contexts(item.get("contexts"), where)
    if mode != "retrieval_taska":
        problems += _check_predictions(item.get("predictions", []), where)
    return problems


@dataclass
class FormatReport:
    problems: list[str]
    warnings: list[str]


def _task_ids(path: Path) -> list[str]:
    ids = []
    for line in read_lines(path, "MTRAGEval"):
        try:
            item = json.loads(line) if line.strip() else None
        except json.JSONDecodeError:
            continue  # reported by the record check
        if isinstance(item, dict) and isinstance(item.get("task_id"), str):
            ids.append(item["task_id"])
    return ids


def check_predictions(prediction_file: str | Path, mode: str, input_file: str | Path | None = None) -> FormatReport:
    """MTRAGEval's format check of a prediction file; with ``input_file``, also the task ids against it."""
    if mode not in MODES:
        raise UserInputError(f"format check mode must be one of {', '.join(MODES)}, got '{mode}'")
    path = Path(prediction_file)
    problems: list[str] = []
    if path.suffix != ".jsonl":
        problems.append(f"{path}: a prediction file must be JSON Lines named *.jsonl")
    if path.is_file() and path.stat().st_size > MAX_FILE_MB * 1024 * 1024:
        problems.append(f"{path}: {path.stat().st_size / 2**20:.2f} MB, over the {MAX_FILE_MB} MB limit")
    if input_file is not None:
        expected, given = _task_ids(Path(input_file)), _task_ids(path)
        if len(expected) != len(given):
            problems.append(f"{path}: {len(given)} tasks, but {input_file} has {len(expected)}")
        problems += [f"{path}: task_id '{t}' of {input_file} is missing" for t in sorted(set(expected) - set(given))]
        problems += [f"{path}: task_id '{t}' is not in {input_file}" for t in sorted(set(given) - set(expected))]
    empty = []
    for number, line in enumerate(read_lines(path, "prediction"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: not JSON ({exc.msg})")
            continue
        problems += check_record(item, where, mode)
        if isinstance(item, dict) and item.get("contexts") == []:
            empty.append(number)
    warnings = [f"{path}: 'contexts' is empty on {len(empty)} line(s): {empty}"] if empty else []
    return FormatReport(problems=problems, warnings=warnings)


__all__ = [
    "ANSWERABILITY_CLASSES",
    "Context",
    "FormatReport",
    "MODES",
    "Message",
    "MtragTask",
    "check_predictions",
    "check_record",
    "read_tasks",
    "task_from_record",
    "task_record",
    "write_tasks",
]
