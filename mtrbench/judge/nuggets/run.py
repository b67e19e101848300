"""``mtrbench judge nuggets GENERATIONS... --task T``: nuggets (given, or created from each turn's judged relevant
passages), each answer's assignment, optionally citation support, then the scores. Every LLM step asks through one
stage log in the output folder (resumable: a rerun asks only what the log has not answered under the same settings).

Writes into the output folder: ``nuggets.jsonl`` (created nuggets, nuggetizer's layout with their settings),
``assignments/<run>.jsonl`` (nuggetizer's assignment layout, one file per run) and ``nuggets_log.jsonl`` (the log).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mtrbench.data.model import TaskData
from mtrbench.formats.generations import Generation, read_generations
from mtrbench.infra.atomic import ensure_folder
from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.judge.nuggets.aggregate import RunScores, run_scores
from mtrbench.judge.nuggets.assign import assign_nuggets, planned_assignment
from mtrbench.judge.nuggets.assignment_file import AnswerAssignment, RunAssignments, write_assignment_file
from mtrbench.judge.nuggets.citations import AnswerSupport, judge_citations, support_stage
from mtrbench.judge.nuggets.create import CreationSettings, create_nuggets
from mtrbench.judge.nuggets.human import check_same_nuggets, read_human_runs
from mtrbench.judge.nuggets.nugget_file import NuggetSet, write_nugget_file
from mtrbench.judge.nuggets.score_files import AssignmentChecks
from mtrbench.judge.nuggets.scores import answer_scores
from mtrbench.judge.nuggets.steps import StepAsker
from mtrbench.judge.nuggets.turns import Turn, turns_of
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.failure_rate import JudgeFailures
from mtrbench.llm.stage import Stage, StageLog, StageOptions
from mtrbench.results.writer import safe_name

LOG_NAME = "nuggets_log.jsonl"
NUGGETS_NAME = "nuggets.jsonl"
ASSIGNMENTS_DIR = "assignments"

Runs = dict[str, dict[str, Generation]]  # run id -> qid -> its answer


@dataclass
class NuggetJudgeOptions:
    output_dir: Path
    creation: CreationSettings = field(default_factory=CreationSettings)
    assign_batch: int = 10  # nuggetizer's assigner_window_size
    max_passage_chars: int | None = None
    citations: bool = False
    dry_run: bool = False
    yes: bool = False
    show_progress: bool = True

    def check(self) -> None:
        for name, value in (
            ("--max-nuggets", self.creation.max_nuggets),
            ("--passage-batch", self.creation.passage_batch),
            ("--label-batch", self.creation.label_batch),
            ("--assign-batch", self.assign_batch),
        ):
            if value < 1:
                raise UserInputError(f"{name} must be at least 1, got {value}")


@dataclass
class NuggetJudgement:
    nuggets: dict[str, NuggetSet]
    nuggets_path: Path | None  # written when created here
    assignments: dict[str, list[AnswerAssignment]]
    assignment_paths: dict[str, Path]
    scores: list[RunScores]
    support: dict[str, dict[str, AnswerSupport | None]] | None
    failures: list[JudgeFailures]
    log_path: Path
    sent: int  # items asked in this run (the rest came from the log)
    human: dict[str, RunAssignments] = field(default_factory=dict)  # run id -> people's assignments (--human-labels)


def read_generation_runs(paths: Sequence[str | Path]) -> Runs:
    """run id (the file's stem, as nuggetizer names a run after its answer file) -> its generations."""
    runs: Runs = {}
    for path in paths:
        run_id = Path(path).stem
        if run_id in runs:
            raise UserInputError(f"two generations files are named {run_id}: a run is named after its file's stem")
        runs[run_id] = read_generations(path)
    return runs


def _check_turns(
    runs: Runs, paths: Mapping[str, str], task: TaskData, nuggets: Mapping[str, NuggetSet] | None, source: str
) -> None:
    known = {q.qid for q in task.queries}
    for run_id, generations in runs.items():
        for qid in generations:
            if qid not in known:
                raise DataError(f"{paths[run_id]}: turn '{qid}' is not a turn of task {task.name}")
            if nuggets is not None and qid not in nuggets:
                raise DataError(f"{source}: no nuggets for turn '{qid}' (answered in {paths[run_id]})")


def _ordered_qids(runs: Runs) -> list[str]:
    return list(dict.fromkeys(qid for generations in runs.values() for qid in generations))


def _ask_all(
    runs: Runs,
    turns: dict[str, Turn],
    task: TaskData,
    judge: JudgeConfig,
    options: NuggetJudgeOptions,
    given: Mapping[str, NuggetSet] | None,
    asker: StepAsker,
    human: Mapping[str, RunAssignments],
) -> (
    tuple[dict[str, NuggetSet], dict[str, list[AnswerAssignment]], dict[str, dict[str, AnswerSupport | None]] | None]
    | None
):
    settings = options.creation
    support: list[Stage] = [support_stage(runs, task, judge, options.max_passage_chars)] if options.citations else []
    later = [planned_assignment(runs, turns, judge, settings.max_nuggets, options.assign_batch), *support]
    nuggets = dict(given) if given is not None else create_nuggets(list(turns.values()), judge, settings, asker, later)
    if nuggets is None:
        return None
    # created nuggets are known only now: checked against the human labels before any answer is assigned
    check_same_nuggets(human, {run_id: {q: nuggets[q].texts() for q in run.answers} for run_id, run in human.items()})
    assignments = assign_nuggets(runs, turns, nuggets, judge, options.assign_batch, asker, support)
    if assignments is None:
        return None
    cited = judge_citations(runs, task, judge, options.max_passage_chars, asker) if options.citations else None
    if options.citations and cited is None:
        return None
    return nuggets, assignments, cited


def judge_nuggets(
    generation_paths: Sequence[str | Path],
    task: TaskData,
    judge: JudgeConfig,
    options: NuggetJudgeOptions,
    *,
    cache: ResponseCache | None = None,
    given: Mapping[str, NuggetSet] | None = None,
    given_source: str = "",
    human_labels: Sequence[str | Path] = (),
) -> NuggetJudgement | None:
    """Judge every answer of every generations file (one run each); None after a dry run. ``human_labels``: people's
    assignment files (one per run, ``judge.nuggets.human``), read and checked before anything is asked."""
    options.check()
    runs = read_generation_runs(generation_paths)
    paths = {Path(p).stem: str(p) for p in generation_paths}
    _check_turns(runs, paths, task, given, given_source)
    answered = {run_id: set(generations) for run_id, generations in runs.items()}
    human = read_human_runs(human_labels, answered, AssignmentChecks(nuggets=given, nugget_source=given_source))
    qids = _ordered_qids(runs)
    turns = turns_of(task, qids, options.creation.relevance_level, options.max_passage_chars)
    output_dir = ensure_folder(options.output_dir)
    log = StageLog(output_dir / LOG_NAME, purpose="nugget judge log")
    asker = StepAsker(
        log, StageOptions(cache=cache, dry_run=options.dry_run, yes=options.yes, show_progress=options.show_progress)
    )
    with log.hold():
        asked = _ask_all(runs, turns, task, judge, options, given, asker, human)
    if asked is None:
        return None
    nuggets, assignments, support = asked
    nuggets_path = None
    if given is None:
        nuggets_path = output_dir / NUGGETS_NAME
        write_nugget_file(nuggets_path, [nuggets[qid] for qid in qids])
    folder = ensure_folder(output_dir / ASSIGNMENTS_DIR)
    assignment_paths = {run_id: folder / f"{safe_name(run_id)}.jsonl" for run_id in assignments}
    for run_id, records in assignments.items():
        write_assignment_file(assignment_paths[run_id], records)
    scores = [
        run_scores(run_id, {a.qid: answer_scores(a.nuggets) for a in records}, task.queries)
        for run_id, records in assignments.items()
    ]
    return NuggetJudgement(
        nuggets=nuggets,
        nuggets_path=nuggets_path,
        assignments=assignments,
        assignment_paths=assignment_paths,
        scores=scores,
        support=support,
        failures=[tally.failures(judge) for tally in asker.tallies.values()],
        log_path=log.path,
        sent=asker.sent,
        human=human,
    )
