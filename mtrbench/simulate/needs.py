"""Information needs and personas: what a simulated user wants and who it is, taken from a task's conversations.

A need is one conversation of the task: its gold rewrites (else its raw questions) say what the user wants to
learn, its gold responses what a good answer holds, its judged passages (the union over its turns, the highest
grade kept) what counts as relevant. iKAT's personal statements (``meta["ptkb"]``) are its persona; a persona file
(JSONL, ``{"need_id": ..., "persona": [statement, ...]}`` per line) adds or replaces them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from mtrbench.data.model import ConversationalQuery, TaskData
from mtrbench.infra.errors import DataError, UserInputError


@dataclass(frozen=True)
class InformationNeed:
    need_id: str  # the source conversation's id
    questions: tuple[str, ...]  # what the user wants to learn, in the order the real user asked it
    responses: tuple[str, ...] = ()  # gold responses (empty where the task has none)
    qrels: Mapping[str, int] = field(default_factory=dict)  # doc id -> grade over the whole conversation
    persona: tuple[str, ...] = ()

    @property
    def opening(self) -> str:
        return self.questions[0]


def _question(query: ConversationalQuery) -> str:
    return (query.gold_rewrite or query.query).strip()


def _persona(query: ConversationalQuery) -> tuple[str, ...]:
    statements = query.meta.get("ptkb")
    if isinstance(statements, Mapping):
        return tuple(str(s) for s in statements.values())
    if isinstance(statements, Sequence) and not isinstance(statements, str):
        return tuple(str(s) for s in statements)
    return ()


def needs_from_task(task: TaskData, limit: int | None = None) -> list[InformationNeed]:
    """One need per conversation (file order), the first ``limit`` of them; a task with none is refused."""
    grouped: dict[str, list[ConversationalQuery]] = {}
    for query in task.queries:
        grouped.setdefault(query.conversation_id, []).append(query)
    needs = []
    for conv_id, queries in grouped.items():
        questions = tuple(q for q in (_question(query) for query in queries) if q)
        if not questions:
            continue
        qrels: dict[str, int] = {}
        for query in queries:
            for doc_id, grade in query.qrels.items():
                qrels[doc_id] = max(grade, qrels.get(doc_id, grade))
        responses = tuple(a for q in queries for a in q.answers[:1] if a.strip())
        needs.append(InformationNeed(conv_id, questions, responses, qrels, _persona(queries[0])))
        if limit is not None and len(needs) == limit:
            break
    if not needs:
        raise UserInputError(
            f"task {task.name} ({task.split}) has no information needs: no conversation with a question to simulate"
        )
    return needs


def read_personas(path: str | Path) -> dict[str, tuple[str, ...]]:
    """need id -> persona statements from a JSONL file; a broken line is one error naming the file and line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UserInputError(f"--personas {path}: cannot read it ({exc.strerror or exc})") from None
    personas: dict[str, tuple[str, ...]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{where}: not JSON ({exc.msg})") from None
        statements = raw.get("persona") if isinstance(raw, dict) else None
        need_id = raw.get("need_id") if isinstance(raw, dict) else None
        if (
            not isinstance(need_id, str)
            or not isinstance(statements, list)
            or not all(isinstance(s, str) for s in statements)
        ):
            raise DataError(f'{where}: needs {{"need_id": str, "persona": [str, ...]}}')
        personas[need_id] = tuple(statements)
    return personas


def with_personas(needs: list[InformationNeed], personas: Mapping[str, tuple[str, ...]]) -> list[InformationNeed]:
    """The needs with the file's personas in place of the task's; a persona for no need is refused."""
    unknown = sorted(set(personas) - {n.need_id for n in needs})
    if unknown:
        raise DataError(f"--personas names needs the task does not have: {', '.join(unknown[:3])}")
    return [replace(n, persona=personas.get(n.need_id, n.persona)) for n in needs]
