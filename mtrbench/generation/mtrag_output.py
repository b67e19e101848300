"""``generate``/``rag`` answers as an MTRAGEval prediction file (``--mtrag-out``).

One record per generated turn: the conversation up to the question (``input``), the passages the generator was
shown as ``contexts`` (document id, text, score: the run's score for Task C, 1.0 for reference passages in Task B),
the reference answers as ``targets``, the answerability label and ``predictions: [{"text": answer}]``. Answers
from the reference passages (``--oracle``) are Task B (``generation_taskb``); answers from a retrieval run are
Task C (``rag_taskc``). The file is checked with MTRAG's format rules after it is written; a problem is an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mtrbench.data.model import USER, ConversationalQuery, TaskData
from mtrbench.formats.mtrag_eval import Context, Message, MtragTask, check_predictions, write_tasks
from mtrbench.formats.run import Run
from mtrbench.infra.errors import DataError

REFERENCE_SCORE = 1.0  # Task B's contexts are given, not ranked; the format still asks a score per context


def prediction_mode(oracle: bool) -> str:
    return "generation_taskb" if oracle else "rag_taskc"


def _speaker(role: str) -> str:
    return "user" if role == USER else "agent"


def prediction_task(
    query: ConversationalQuery, record: Mapping[str, Any], task: TaskData, run: Run | None, collection: str
) -> MtragTask:
    """The MTRAGEval record of one generated turn."""
    scores = run.get(query.qid, {}) if run is not None else {}
    contexts = []
    for doc_id in record.get("passages") or []:
        position = task.corpus.position(doc_id)
        contexts.append(
            Context(
                document_id=doc_id,
                text=task.corpus.texts[position],
                title=task.corpus.titles[position] or "",
                score=float(scores.get(doc_id, REFERENCE_SCORE)) if run is not None else REFERENCE_SCORE,
            )
        )
    turns = [Message(_speaker(m.role), m.content) for m in query.history] + [Message("user", query.query)]
    label = query.meta.get("answerability")
    if isinstance(label, list):
        label = label[0] if label else None
    return MtragTask(
        task_id=query.qid,
        conversation_id=query.conversation_id,
        collection=collection,
        input=tuple(turns),
        contexts=tuple(contexts),
        targets=tuple(Message("agent", answer) for answer in query.answers),
        answerability=label if isinstance(label, str) else None,
        predictions=(str(record["answer"]),),
    )


def write_mtrag_predictions(
    path: Path,
    queries: Sequence[ConversationalQuery],
    done: Mapping[str, Mapping[str, Any]],
    task: TaskData,
    run: Run | None,
    oracle: bool,
) -> int:
    """Write the turns that have an answer, in task order; returns how many. The collection is the task's
    MTRAG collection name where its loader records one, else the task name."""
    records = []
    for query in queries:
        record = done.get(query.qid)
        if record is None or not isinstance(record.get("answer"), str):
            continue
        collection = str(query.meta.get("collection") or task.name)
        records.append(prediction_task(query, record, task, run, collection))
    if not records:
        raise DataError(f"no answered turn to write to {path}")
    path = Path(path)
    if path.suffix != ".jsonl":
        raise DataError(f"--mtrag-out {path}: MTRAGEval prediction files are JSON Lines named *.jsonl")
    write_tasks(path, records)
    report = check_predictions(path, prediction_mode(oracle))
    if report.problems:
        raise DataError(
            f"{path} fails MTRAG's format check: {report.problems[0]}"
            + (f" (and {len(report.problems) - 1} more)" if len(report.problems) > 1 else "")
        )
    return len(records)
