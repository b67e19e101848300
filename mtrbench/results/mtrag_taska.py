"""An ``eval`` result as an MTRAGEval Task A (retrieval) prediction file: ``mtrbench eval --mtrag-out FILE.jsonl``.

One record per query of the result's run, in the task's order, in the fields of the official Task A sample
(IBM/mt-rag-benchmark ``scripts/evaluation/README.md``):

* ``task_id``: the query id as the MTRAG loaders give it, ``<conversation_id><::><turn>``. It is the id of
  MTRAG's published retrieval qrels and of MTRAG-UN's task files, so ``mtrbench score --predictions`` finds each
  task's judgments. (MTRAG's ``generation_tasks`` and the SemEval sample input spell it ``<conversation_id>::<turn>``.)
* ``conversation_id``; ``Collection``: MTRAG's collection name as the loader records it in ``query.meta``
  (``mt-rag-govt-elser-512-100-20240611``), as the Task B/C writer does;
* ``input``: the conversation up to and including the question, as the loader has it (on ``mtrag-*`` cards the
  user turns only: MTRAG's retrieval tasks publish no agent turns);
* ``contexts``: the run's documents in trec_eval's order (score descending, then document id descending), each
  with the run's ``score`` and the corpus ``text`` and ``title``; at most :data:`MAX_CONTEXTS` (10, the official
  checker's limit), fewer when ``--top-k`` retrieved fewer.

The run is read from the result's ``.run.trec``, so a result skipped as finished is written the same way. The file
is then checked with MTRAG's ``retrieval_taska`` rules; a problem is an error.
"""

from __future__ import annotations

from pathlib import Path

from mtrbench.data.cards import TaskCard
from mtrbench.data.model import USER, ConversationalQuery, TaskData
from mtrbench.formats.mtrag_eval import MAX_CONTEXTS, Context, Message, MtragTask, check_predictions, write_tasks
from mtrbench.formats.run import Run, ranked
from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.results.result import Result

MODE = "retrieval_taska"
MTRAG_FORMATS = ("mtrag", "mtragun")  # the loaders of the mtrag-* and mtragun-* cards


def check_request(path: str | Path, card: TaskCard) -> None:
    """What can be wrong before anything is evaluated: the file name and the task."""
    if Path(path).suffix != ".jsonl":
        raise UserInputError(f"--mtrag-out {path}: MTRAGEval prediction files are JSON Lines named *.jsonl")
    if card.format not in MTRAG_FORMATS:
        raise UserInputError(
            f"--mtrag-out writes MTRAGEval Task A files for MTRAG and MTRAG-UN tasks (mtrag-*, "
            f"mtragun-*); task '{card.name}' is a {card.format} task"
        )


def _turns(query: ConversationalQuery) -> tuple[Message, ...]:
    history = tuple(Message("user" if m.role == USER else "agent", m.content) for m in query.history)
    return (*history, Message("user", query.query))


def taska_tasks(task: TaskData, run: Run) -> list[MtragTask]:
    """The Task A record of each query of ``run``, in the task's order."""
    records = []
    for query in task.queries:
        docs = run.get(query.qid)
        if docs is None:
            continue
        contexts = []
        for doc_id, score in ranked(docs)[:MAX_CONTEXTS]:
            if doc_id not in task.corpus:
                raise DataError(
                    f"document '{doc_id}' of the run (query {query.qid}) is not in {task.name}'s corpus: "
                    f"the run was made over another corpus"
                )
            position = task.corpus.position(doc_id)
            contexts.append(
                Context(
                    document_id=doc_id,
                    text=task.corpus.texts[position],
                    title=task.corpus.titles[position] or "",
                    score=float(score),
                )
            )
        records.append(
            MtragTask(
                task_id=query.qid,
                conversation_id=query.conversation_id,
                collection=str(query.meta.get("collection") or task.name),
                input=_turns(query),
                contexts=tuple(contexts),
            )
        )
    return records


def write_taska(path: str | Path, result: Result, task: TaskData) -> int:
    """Write ``result``'s run over ``task`` (the task it was evaluated on, corpus loaded) as a Task A file and check
    it with MTRAG's format rules; returns the number of tasks written."""
    path = Path(path)
    if path.suffix != ".jsonl":
        raise UserInputError(f"--mtrag-out {path}: MTRAGEval prediction files are JSON Lines named *.jsonl")
    if (result.task_name, result.split) != (task.name, task.split):
        raise UserInputError(
            f"the result is of {result.task_name} ({result.split}), the task given is {task.name} ({task.split})"
        )
    records = taska_tasks(task, result.run())
    if not records:
        raise DataError(f"the run {result.run_path} answers none of {task.name}'s queries: nothing to write to {path}")
    write_tasks(path, records)
    report = check_predictions(path, MODE)
    if report.problems:
        raise DataError(
            f"{path} fails MTRAG's format check: {report.problems[0]}"
            + (f" (and {len(report.problems) - 1} more)" if len(report.problems) > 1 else "")
        )
    return len(records)


__all__ = ["MODE", "MTRAG_FORMATS", "check_request", "taska_tasks", "write_taska"]
