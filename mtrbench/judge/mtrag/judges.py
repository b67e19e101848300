"""MTRAG's LLM judges through ``mtrbench.llm``: ask, log every reply, resume.

Each question is an item keyed ``metric|task_id|judge``, asked through ``mtrbench.llm.stage`` (one stage per
judge); its reply is appended to ``llm_judgments.jsonl`` as it arrives, so a killed run keeps what was answered
and a rerun asks only the items the log has no readable reply for (same prompt, same judge model). The cost estimate covers both RL_F steps and is shown before anything is
sent; step 2 (verdicts) depends on step 1's statements, so it is sent after step 1.

RB_llm asks every judge and takes the median; idk_eval, underspecified_eval and RL_F ask the first judge, as the
official script runs them with its one judge model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.formats.mtrag_eval import MtragTask
from mtrbench.infra.numeric import Scale, on_scale
from mtrbench.judge.mtrag import prompts
from mtrbench.judge.mtrag.faithfulness import faithfulness_score, parse_statements, parse_verdicts
from mtrbench.judge.mtrag.names import LLM_METRICS
from mtrbench.judge.mtrag.rating import median, rb_llm_rating
from mtrbench.judge.mtrag.verdicts import clarification_verdict, idk_verdict
from mtrbench.judge.prompts import prompt_hash
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.stage import JSONValue, Stage, StageItem, StageLog, StageOptions, StageRecord, StageRun, run_stages
from mtrbench.llm.types import ChatRequest

LOG_NAME = "llm_judgments.jsonl"
STAGE = "mtrag"
_STATEMENTS, _VERDICTS = "RL_F.statements", "RL_F.verdicts"


@dataclass(frozen=True)
class _Item:
    step: str  # a metric, or one of the two RL_F steps
    task_id: str
    judge: JudgeConfig
    messages: list[dict[str, str]]
    parse: Callable[[str], Any]

    @property
    def key(self) -> str:
        return f"{self.step}|{self.task_id}|{self.judge.name}"

    @property
    def settings(self) -> dict[str, str]:
        """What a logged reply must match to be reused (the names MTRAG's earlier log layout used)."""
        return {"model": self.judge.model, "prompt_hash": prompt_hash(self.messages)}

    def stage_item(self) -> StageItem:
        request = ChatRequest(
            key=self.key,
            messages=self.messages,
            parse=self.parse,
            want_json=self.step in (_STATEMENTS, _VERDICTS, "underspecified_eval"),
        )
        return StageItem(
            self.key, request, {"prompt_hash": prompt_hash(self.messages)}, {"step": self.step, "task_id": self.task_id}
        )


@dataclass
class LlmJudgeOptions:
    output_dir: Path
    metrics: tuple[str, ...] = LLM_METRICS
    dry_run: bool = False
    yes: bool = False
    show_progress: bool = True


@dataclass
class LlmJudgements:
    """Per metric, per task id: the value of each answered task (idk_eval None: the official "unknown")."""

    values: dict[str, dict[str, float | None]] = field(default_factory=dict)
    failures: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # judge -> [(key, reason)] this run
    asked: dict[str, int] = field(default_factory=dict)  # judge -> items to answer in all
    unanswered: dict[str, int] = field(default_factory=dict)  # judge -> items still without a readable reply
    sent: int = 0  # items asked in this run (the rest came from the log)
    log_path: Path | None = None


def _step_one_items(tasks: Sequence[MtragTask], judges: Sequence[JudgeConfig], metrics: Sequence[str]) -> list[_Item]:
    first = judges[0]
    items: list[_Item] = []
    for task in tasks:
        answer = task.prediction
        if "RB_llm" in metrics:
            items += [
                _Item("RB_llm", task.task_id, j, prompts.rb_llm_messages(task, answer), rb_llm_rating) for j in judges
            ]
        if "idk_eval" in metrics:
            items.append(_Item("idk_eval", task.task_id, first, prompts.idk_messages(task, answer), idk_verdict))
        if "underspecified_eval" in metrics:
            items.append(
                _Item(
                    "underspecified_eval",
                    task.task_id,
                    first,
                    prompts.clarification_messages(answer),
                    clarification_verdict,
                )
            )
        if "RL_F" in metrics:
            items.append(
                _Item(
                    _STATEMENTS,
                    task.task_id,
                    first,
                    prompts.statements_messages(task.conversation_text, answer),
                    parse_statements,
                )
            )
    return items


def _verdict_item(task: MtragTask, judge: JudgeConfig, statements: Sequence[str]) -> _Item:
    return _Item(
        _VERDICTS,
        task.task_id,
        judge,
        prompts.verdicts_messages([c.text for c in task.contexts], statements),
        parse_verdicts,
    )


class _Answers:
    """The log's readable replies: per item, its value when an ok record has the item's prompt and judge model."""

    def __init__(self, log: StageLog) -> None:
        self.log = log
        self.reload()

    def reload(self) -> None:
        self.by_key: dict[str, list[tuple[int, StageRecord]]] = {}
        for number, record in self.log.read_numbered()[0]:
            if record.ok:
                self.by_key.setdefault(record.key, []).append((number, record))

    def lookup(self, item: _Item) -> tuple[bool, JSONValue]:
        """The item's logged value, checked on its step's scale (a log edited by hand, or by another program,
        must not average a NaN or a rating of 42 into the summary): one error naming the log's line."""
        settings = item.settings
        for number, record in reversed(self.by_key.get(item.key, [])):
            if record.matches(STAGE, settings):
                return True, _checked(item.step, record.value, f"{self.log.path}:{number}")
        return False, None


# What each step's parser writes to the log (docs/mtrag.md): RB_llm a 1-10 rating / 10 (0.5 when unreadable);
# idk_eval and underspecified_eval 1 (yes), 0 (no) or 0.5 (another word), idk_eval None without a leading word.
_LOGGED_SCALES = {
    "RB_llm": Scale("RB_llm's 1-10 rating divided by 10, in (0, 1]", low=0, high=1),
    "idk_eval": Scale("idk_eval's 1, 0 or 0.5", also=(0, 0.5, 1)),
    "underspecified_eval": Scale("underspecified_eval's 1, 0 or 0.5", also=(0, 0.5, 1)),
}
_VERDICT_SCALE = Scale("a RL_F verdict, 0 or 1", also=(0, 1))


def _checked(step: str, value: JSONValue, where: str) -> JSONValue:
    if step == _VERDICTS and isinstance(value, list):
        for verdict in value:
            on_scale(verdict, where, "the verdict", _VERDICT_SCALE)
    elif step in _LOGGED_SCALES and not (step == "idk_eval" and value is None):
        on_scale(value, where, f"the {step} value", _LOGGED_SCALES[step])
    return value


def _stages(items: Sequence[_Item], judges: Sequence[JudgeConfig]) -> list[Stage]:
    """One stage per judge (in the judges' order, an empty one for a judge with nothing to ask)."""
    return [
        Stage(
            name=STAGE,
            judge=judge,
            items=[i.stage_item() for i in items if i.judge.name == judge.name],
            settings={"model": judge.model},
            desc=f"MTRAG judge {judge.name}",
            unit="step-one items",
        )
        for judge in judges
    ]


def _note(run: StageRun, outcome: LlmJudgements) -> None:
    """This run's sent items and failures, per judge."""
    for stage_outcome in run.outcomes:
        outcome.sent += len(stage_outcome.pending)
        for record in stage_outcome.asked_now:
            if not record.ok:
                outcome.failures.setdefault(record.judge, []).append((record.key, record.error or "no reply"))


def run_llm_judges(
    tasks: Sequence[MtragTask],
    judges: Sequence[JudgeConfig],
    options: LlmJudgeOptions,
    cache: ResponseCache | None = None,
) -> LlmJudgements | None:
    """Every asked LLM metric for every task; None after a dry run."""
    metrics = [m for m in options.metrics if m in LLM_METRICS]
    log = StageLog(Path(options.output_dir) / LOG_NAME, purpose="MTRAG judge log")
    answers = _Answers(log)
    outcome = LlmJudgements(log_path=log.path)
    stage_options = StageOptions(
        cache=cache, dry_run=options.dry_run, yes=options.yes, show_progress=options.show_progress
    )
    # for the estimate, step 2 is costed with the whole answer as its one statement
    planned = [
        _verdict_item(t, judges[0], [t.prediction])
        for t in tasks
        if "RL_F" in metrics and not _verdicts_done(t, judges[0], answers)
    ]
    step_one = _step_one_items(tasks, judges, metrics)
    shown = [i.stage_item().request for i in step_one if not answers.lookup(i)[0]] + [
        i.stage_item().request for i in planned
    ]
    run = run_stages(
        _stages(step_one, judges), log, stage_options, costed_later=_stages(planned, judges[:1]), shown=shown
    )
    if run.dry_run is not None:
        return None
    _note(run, outcome)
    answers.reload()
    second = []
    for task in tasks if "RL_F" in metrics else ():
        done, statements = answers.lookup(_step_one_items([task], judges, ["RL_F"])[0])
        if done and statements and isinstance(statements, list):
            second.append(_verdict_item(task, judges[0], [str(s) for s in statements]))
    if second:
        _note(run_stages(_stages(second, judges[:1]), log, stage_options, confirm=False), outcome)
        answers.reload()
    _collect(tasks, judges, metrics, answers, outcome)
    return outcome


def _verdicts_done(task: MtragTask, judge: JudgeConfig, log: _Answers) -> bool:
    done, statements = log.lookup(_step_one_items([task], [judge], ["RL_F"])[0])
    return done and (not statements or log.lookup(_verdict_item(task, judge, statements))[0])


def _collect(
    tasks: Sequence[MtragTask],
    judges: Sequence[JudgeConfig],
    metrics: Sequence[str],
    log: _Answers,
    outcome: LlmJudgements,
) -> None:
    """Values of the answered items only: a task missing from ``values[metric]`` was not answered."""
    outcome.asked = {j.name: 0 for j in judges}
    outcome.unanswered = {j.name: 0 for j in judges}
    for task in tasks:
        items = _step_one_items([task], judges, metrics)
        for item in items:
            outcome.asked[item.judge.name] += 1
            outcome.unanswered[item.judge.name] += not log.lookup(item)[0]
        if "RB_llm" in metrics:
            ratings = [log.lookup(i) for i in items if i.step == "RB_llm"]
            if all(done for done, _ in ratings):
                outcome.values.setdefault("RB_llm", {})[task.task_id] = median([v for _, v in ratings])
        for item in items:
            if item.step in ("idk_eval", "underspecified_eval"):
                done, value = log.lookup(item)
                if done:  # an idk_eval of None is the official "unknown" (no leading word)
                    outcome.values.setdefault(item.step, {})[task.task_id] = value
        if "RL_F" in metrics:
            value = _rl_f(task, judges[0], log)
            if value is not None:
                outcome.values.setdefault("RL_F", {})[task.task_id] = value
            elif log.lookup(_step_one_items([task], judges, ["RL_F"])[0])[0]:
                outcome.asked[judges[0].name] += 1  # step 2 asked and not answered
                outcome.unanswered[judges[0].name] += 1


def _rl_f(task: MtragTask, judge: JudgeConfig, log: _Answers) -> float | None:
    done, statements = log.lookup(_step_one_items([task], [judge], ["RL_F"])[0])
    if not done:
        return None
    if not statements:
        return faithfulness_score(None)
    done, verdicts = log.lookup(_verdict_item(task, judge, statements))
    return faithfulness_score(verdicts) if done else None
