"""``mtrbench judge nuggets --assignments FILE...``: existing assignment files (one run each) checked and scored.

Checks, each failing with one error naming the file and record: two files of the same run; an answer to a turn the
task does not have (with a task); a turn the nugget file lacks, or nuggets other than the nugget file's for that turn
(with ``--nuggets``: the importance then comes from the nugget file, e.g. iKAT's grades); an answer whose run and turn
have no response in the responses file (with ``--responses``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from mtrbench.infra.errors import DataError
from mtrbench.judge.nuggets.aggregate import ConversationQuery, RunScores, run_scores
from mtrbench.judge.nuggets.assignment_file import AnswerAssignment, RunAssignments, read_assignment_file
from mtrbench.judge.nuggets.nugget_file import NuggetSet
from mtrbench.judge.nuggets.scores import NuggetScores, answer_scores


@dataclass(frozen=True)
class AssignmentChecks:
    """What the assignment files are checked against; each is optional."""

    nuggets: Mapping[str, NuggetSet] | None = None  # qid -> the turn's nuggets
    nugget_source: str = ""  # the nugget file, for messages
    responses: Mapping[str, Mapping[str, str]] | None = None  # run id -> qid -> response text
    response_source: str = ""
    task_qids: Collection[str] | None = None
    task_name: str = ""


def per_answer_scores(run: RunAssignments) -> dict[str, NuggetScores]:
    """Each answer's four scores, keyed by its turn (qid): what a per-answer analysis (e.g. human labels) joins on."""
    return {qid: answer_scores(answer.nuggets) for qid, answer in run.answers.items()}


def _with_nugget_file(answer: AnswerAssignment, nugget_set: NuggetSet, where: str, source: str) -> AnswerAssignment:
    """The answer's labels under the nugget file's importance; its nuggets must be exactly the file's."""
    importance = {n.text.strip(): n.importance for n in nugget_set.nuggets}
    labelled = {n.text.strip() for n in answer.nuggets}
    unknown = [n.text for n in answer.nuggets if n.text.strip() not in importance]
    if unknown:
        raise DataError(f"{where}: nugget {unknown[0]!r} is not a nugget of turn {answer.qid} in {source}")
    missing = [text for text in importance if text not in labelled]
    if missing:
        raise DataError(f"{where}: nugget {missing[0]!r} of turn {answer.qid} in {source} is not assigned")
    nuggets = tuple(replace(n, importance=importance[n.text.strip()]) for n in answer.nuggets)
    return replace(answer, nuggets=nuggets)


def checked_run(run: RunAssignments, checks: AssignmentChecks) -> RunAssignments:
    """The run with each answer checked (see the module's docstring); with a nugget file, its importance."""
    if checks.responses is not None and run.run_id not in checks.responses:
        raise DataError(f"{run.path}: run '{run.run_id}' has no response in {checks.response_source}")
    answers = {}
    for qid, answer in run.answers.items():
        where = run.where(qid)
        if checks.task_qids is not None and qid not in checks.task_qids:
            raise DataError(f"{where}: turn '{qid}' is not a turn of task {checks.task_name}")
        if checks.responses is not None and qid not in checks.responses[run.run_id]:
            raise DataError(
                f"{where}: unknown answer id {run.run_id}/{qid}: no such response in {checks.response_source}"
            )
        if checks.nuggets is not None:
            if qid not in checks.nuggets:
                raise DataError(f"{where}: turn '{qid}' has no nuggets in {checks.nugget_source}")
            answer = _with_nugget_file(answer, checks.nuggets[qid], where, checks.nugget_source)
        answers[qid] = answer
    return replace(run, answers=answers)


def read_runs(paths: Sequence[str | Path], checks: AssignmentChecks) -> list[RunAssignments]:
    """Each file read and checked; two files of one run is an error naming both."""
    runs: list[RunAssignments] = []
    seen: dict[str, Path | None] = {}
    for path in paths:
        run = read_assignment_file(path)
        if run.run_id in seen:
            raise DataError(f"{path}: run '{run.run_id}' is also the run of {seen[run.run_id]}; one file per run")
        seen[run.run_id] = run.path
        runs.append(checked_run(run, checks))
    return runs


def score_runs(runs: Sequence[RunAssignments], queries: Sequence[ConversationQuery] = ()) -> list[RunScores]:
    return [run_scores(run.run_id, per_answer_scores(run), queries) for run in runs]
