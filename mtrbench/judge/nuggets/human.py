"""``judge nuggets --human-labels FILE...``: each run's nugget scores corrected by people's assignments (PPI).

The human labels of a run are a nugget assignment file in nuggetizer's layout (as ``--assignments`` reads), made by
people for some of the run's answers. Each labelled answer's four scores come from the same formulas
(``scores.answer_scores``), and each score's run mean is estimated by PPI (``mtrbench.analyses.ppi``): the LLM's
per-answer scores over all the run's answers, the people's on the labelled ones.

One file per run. A file belongs to the run its records name (``run_id``); a file whose records name no run belongs
to the run named like its stem, or, when one run is judged, to that run. The file is read and checked as an
``--assignments`` file is (with ``--nuggets``, the importance comes from the nugget file), each labelled answer must
be one the run has, and its nuggets (their texts) exactly those the LLM assigned for that turn.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from mtrbench.analyses.ppi import PPIEstimate, ppi_mean
from mtrbench.infra.errors import DataError
from mtrbench.judge.nuggets.aggregate import RunScores
from mtrbench.judge.nuggets.assignment_file import RunAssignments, read_assignment_file
from mtrbench.judge.nuggets.score_files import AssignmentChecks, checked_run, per_answer_scores
from mtrbench.judge.nuggets.scores import SCORE_NAMES

MIN_LABELLED = 2  # PPI's sample variances need two labelled answers


@dataclass(frozen=True)
class NuggetPPI:
    """One run's four scores, each estimated by the LLM alone, by PPI and by the people alone."""

    run_id: str
    source: Path  # the human assignment file
    estimates: dict[str, PPIEstimate]  # score name -> its estimate

    def as_dict(self) -> dict[str, object]:
        return {"human_labels": str(self.source), **{name: e.as_dict() for name, e in self.estimates.items()}}


def _run_of(run: RunAssignments, answered: Mapping[str, Collection[str]]) -> str:
    """The judged run a human file belongs to (see the module's docstring)."""
    judged = ", ".join(answered)
    if any(answer.run_id for answer in run.answers.values()):
        if run.run_id not in answered:
            raise DataError(f"{run.path}: its records are of run '{run.run_id}', not a run judged here ({judged})")
        return run.run_id
    if run.run_id in answered:
        return run.run_id
    if len(answered) == 1:
        return next(iter(answered))
    raise DataError(
        f"{run.path}: its records name no run_id and its stem '{run.run_id}' is not a run judged here ({judged})"
    )


def read_human_runs(
    paths: Sequence[str | Path], answered: Mapping[str, Collection[str]], checks: AssignmentChecks
) -> dict[str, RunAssignments]:
    """run id -> the people's assignments for it; ``answered``: run id -> the turns it answered. A malformed
    record, a second file for one run, a turn the run did not answer, a record the ``checks`` reject, or fewer than
    two labelled answers is one error naming the file (and line)."""
    runs: dict[str, RunAssignments] = {}
    for path in paths:
        run = read_assignment_file(path)
        run_id = _run_of(run, answered)
        if run_id in runs:
            raise DataError(f"{path}: run '{run_id}' already has human labels in {runs[run_id].path}; one file a run")
        for qid in run.answers:
            if qid not in answered[run_id]:
                raise DataError(f"{run.where(qid)}: unknown turn '{qid}': run '{run_id}' has no answer to it")
        if len(run.answers) < MIN_LABELLED:
            raise DataError(f"{path}: PPI needs at least {MIN_LABELLED} labelled answers, the file has 1")
        runs[run_id] = checked_run(replace(run, run_id=run_id), checks)
    return runs


def check_same_nuggets(human: Mapping[str, RunAssignments], nuggets: Mapping[str, Mapping[str, Sequence[str]]]) -> None:
    """Each labelled answer's nugget texts are those the LLM side has for its turn; ``nuggets``: run id -> turn ->
    the LLM's nugget texts. A difference is one error naming the file, line and turn."""
    for run_id, run in human.items():
        for qid, answer in run.answers.items():
            theirs = Counter(text.strip() for text in nuggets[run_id][qid])
            ours = Counter(n.text.strip() for n in answer.nuggets)
            if ours == theirs:
                continue
            extra, missing = list(ours - theirs), list(theirs - ours)
            detail = f"{extra[0]!r} is not one of them" if extra else f"{missing[0]!r} is not assigned"
            raise DataError(
                f"{run.where(qid)}: turn '{qid}': the human nuggets differ from the {sum(theirs.values())} the LLM "
                f"assigned for it ({detail})"
            )


def nugget_ppi(
    scores: Sequence[RunScores], human: Mapping[str, RunAssignments], alpha: float = 0.05
) -> list[NuggetPPI]:
    """PPI of each score of each run given human labels, in the order of ``scores``."""
    out = []
    for run in scores:
        if run.run_id not in human:
            continue
        labelled = per_answer_scores(human[run.run_id])
        estimates = {
            name: ppi_mean(
                {qid: getattr(s, name) for qid, s in run.per_answer.items()},
                {qid: getattr(s, name) for qid, s in labelled.items()},
                alpha,
            )
            for name in SCORE_NAMES
        }
        out.append(NuggetPPI(run.run_id, human[run.run_id].path or Path(), estimates))
    return out
