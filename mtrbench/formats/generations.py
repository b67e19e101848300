"""The generations file: one generated answer per turn (JSONL), the input of ``mtrbench judge``.

``{"qid", "conversation_id", "turn", "question", "answer", "passages", "generator", "history", "source"}``;
a citation label ``[n]`` in ``answer`` refers to ``passages[n-1]``, the documents shown to the generator in
the order shown. Only ``qid`` and ``answer`` are required; ``passages`` is needed by citation measures.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.infra.errors import DataError

# ``history`` names that ``mtrbench generate`` wrote (and took as --history) before it used eval's --history
# names: read as aliases of the current name, never written. A model's rewrite was "rewrite" with
# ``history_source`` "llm:MODEL"; it is now "rewrite:llm".
LEGACY_HISTORIES = {"raw": "full", "summary": "summary:llm"}


def current_history(history: str, history_source: object = None) -> str:
    """The current name of a generation's ``history`` as read from a record or given as a flag."""
    if history == "rewrite" and isinstance(history_source, str) and history_source.startswith("llm:"):
        return "rewrite:llm"
    return LEGACY_HISTORIES.get(history, history)


@dataclass(frozen=True)
class Generation:
    qid: str
    answer: str
    passages: tuple[str, ...] = ()  # doc ids shown to the generator; label [n] is passages[n-1]
    conversation_id: str = ""
    turn: int | None = None
    question: str = ""
    generator: str = ""
    history: str = ""
    source: str = ""  # "run" (retrieved passages) or "oracle" (gold passages)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


_KNOWN = ("qid", "answer", "passages", "conversation_id", "turn", "question", "generator", "history", "source")


def generation_from_record(row: object, where: str) -> Generation:
    if not isinstance(row, dict):
        raise DataError(f"{where}: a generation must be a JSON object")
    qid = row.get("qid")
    if not isinstance(qid, (str, int)) or isinstance(qid, bool) or str(qid) == "":
        raise DataError(f"{where}: needs a 'qid' (the query id as in the task's qrels)")
    where = f"{where} ({qid})"
    answer = row.get("answer")
    if not isinstance(answer, str):
        raise DataError(f"{where}: 'answer' must be a string")
    passages = row.get("passages", [])
    if not isinstance(passages, list) or not all(
        isinstance(p, (str, int)) and not isinstance(p, bool) for p in passages
    ):
        raise DataError(f"{where}: 'passages' must be a list of document ids")
    turn = row.get("turn")
    if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int)):
        raise DataError(f"{where}: 'turn' must be an integer")
    text = {k: row.get(k) for k in ("conversation_id", "question", "generator", "history", "source")}
    for key, value in text.items():
        if value is not None and not isinstance(value, (str, int)):
            raise DataError(f"{where}: '{key}' must be a string")
    return Generation(
        qid=str(qid),
        answer=answer,
        passages=tuple(str(p) for p in passages),
        conversation_id=str(text["conversation_id"] or ""),
        turn=turn,
        question=str(text["question"] or ""),
        generator=str(text["generator"] or ""),
        history=current_history(str(text["history"] or ""), row.get("history_source")),
        source=str(text["source"] or ""),
        extra={k: v for k, v in row.items() if k not in _KNOWN},
    )


def read_generations(path: str | Path) -> dict[str, Generation]:
    """qid -> generation, in file order. A query answered twice, a bad line or field: one error naming
    the file and line."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"generations file {path} does not exist")
    out: dict[str, Generation] = {}
    with path.open("rb") as handle:
        for n, raw in enumerate(handle, 1):
            where = f"{path}:{n}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(f"{path}: not UTF-8 text at line {n} (byte {exc.start + 1}: {exc.reason})") from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{where}: not valid JSON ({exc.msg})") from None
            generation = generation_from_record(row, where)
            if generation.qid in out:
                raise DataError(f"{where}: query '{generation.qid}' has a second generation; one per turn")
            out[generation.qid] = generation
    if not out:
        raise DataError(f"generations file {path} holds no generation")
    return out
