"""MTRAG's LLM judges through ``mtrbench.llm``: ask, log every reply, resume.

Each question is an item keyed ``metric|task_id|judge``; its reply is appended to ``llm_judgments.jsonl`` as it
arrives, so a killed run keeps what was answered and a rerun asks only the items the log has no readable reply
for (same prompt, same judge model). The cost estimate covers both RL_F steps and is shown before anything is
sent; step 2 (verdicts) depends on step 1's statements, so it is sent after step 1.

RB_llm asks every judge and takes the median; idk_eval, underspecified_eval and RL_F ask the first judge, as the
official script runs them with its one judge model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from mtrbench.formats.lines import read_log_records
from mtrbench.formats.mtrag_eval import MtragTask
from mtrbench.infra.locking import held_lock, lock_path_for
from mtrbench.judge.mtrag import prompts
from mtrbench.judge.mtrag.faithfulness import faithfulness_score, parse_statements, parse_verdicts
from mtrbench.judge.mtrag.names import LLM_METRICS
from mtrbench.judge.mtrag.rating import median, rb_llm_rating
from mtrbench.judge.mtrag.verdicts import clarification_verdict, idk_verdict
from mtrbench.judge.prompts import prompt_hash
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig

if TYPE_CHECKING:
    from mtrbench.llm.client import ChatResult

LOG_NAME = "llm_judgments.jsonl"
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


class _Log:
    """The append-only reply log: the readable reply per key for the current prompt and judge model."""

    def __init__(self, path: Path) -> None:
        self.path = path
        records, _ = read_log_records(path)
        self.answered: dict[tuple[str, str, str], Any] = {}
        for r in records:
            if r.get("ok"):
                self.answered[(r.get("key"), r.get("prompt_hash"), r.get("model"))] = r.get("value")

    def lookup(self, item: _Item) -> tuple[bool, Any]:
        key = (item.key, prompt_hash(item.messages), item.judge.model)
        return key in self.answered, self.answered.get(key)

    def append(self, handle: TextIO, item: _Item, result: ChatResult) -> None:
        record = {
            "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "key": item.key,
            "step": item.step,
            "task_id": item.task_id,
            "judge": item.judge.name,
            "model": item.judge.model,
            "prompt_hash": prompt_hash(item.messages),
            "ok": bool(result.ok),
            "value": result.value if result.ok else None,
            "error": result.error,
            "reply": result.text,
        }
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        handle.flush()  # a killed run keeps every reply already received
        if result.ok:
            self.answered[(item.key, record["prompt_hash"], item.judge.model)] = result.value


def _requests(items: Sequence[_Item]):
    from mtrbench.llm.client import ChatRequest

    return [
        ChatRequest(
            key=i.key,
            messages=i.messages,
            parse=i.parse,
            want_json=i.step in (_STATEMENTS, _VERDICTS, "underspecified_eval"),
        )
        for i in items
    ]


def _ask(
    items: Sequence[_Item], log: _Log, cache: ResponseCache | None, outcome: LlmJudgements, show_progress: bool
) -> None:
    from mtrbench.llm.hf import make_client

    by_judge: dict[str, list[_Item]] = {}
    for item in items:
        by_judge.setdefault(item.judge.name, []).append(item)
    log.path.parent.mkdir(parents=True, exist_ok=True)
    with held_lock(lock_path_for(log.path), purpose=f"MTRAG judge log {log.path}"):
        cut_short = log.path.is_file() and log.path.stat().st_size > 0 and not log.path.read_bytes().endswith(b"\n")
        with log.path.open("a", encoding="utf-8") as handle:
            if cut_short:  # a kill mid-write left half a line: start ours on a fresh one
                handle.write("\n")
            for name, pending in by_judge.items():
                by_key = {i.key: i for i in pending}
                client = make_client(pending[0].judge, cache)  # HTTP, or an in-process hf:// model

                def on_result(result: ChatResult, by_key: dict[str, _Item] = by_key, name: str = name) -> None:
                    item = by_key[result.key]
                    log.append(handle, item, result)
                    if not result.ok:
                        outcome.failures.setdefault(name, []).append((item.key, result.error or "no reply"))

                client.run(
                    _requests(pending), desc=f"MTRAG judge {name}", show_progress=show_progress, on_result=on_result
                )
                outcome.sent += len(pending)


def _confirm(pending: Sequence[_Item], judges: Sequence[JudgeConfig], cache: ResponseCache | None, yes: bool) -> None:
    from mtrbench.llm.client import ChatClient
    from mtrbench.llm.cost import confirm_cost, estimate_cost
    from mtrbench.llm.hf import is_hf_url

    for judge in judges:
        if not is_hf_url(judge.base_url):
            ChatClient(judge, cache)  # a missing key stops here, before the cost question
    estimates = [
        (j, estimate_cost(_requests([i for i in pending if i.judge.name == j.name]), j, cache)) for j in judges
    ]
    confirm_cost([(j, e) for j, e in estimates if e.n_requests], yes)


def run_llm_judges(
    tasks: Sequence[MtragTask],
    judges: Sequence[JudgeConfig],
    options: LlmJudgeOptions,
    cache: ResponseCache | None = None,
) -> LlmJudgements | None:
    """Every asked LLM metric for every task; None after a dry run."""
    from mtrbench.llm.cost import print_dry_run

    metrics = [m for m in options.metrics if m in LLM_METRICS]
    log = _Log(Path(options.output_dir) / LOG_NAME)
    outcome = LlmJudgements(log_path=log.path)
    first = _step_one_items(tasks, judges, metrics)
    pending = [i for i in first if not log.lookup(i)[0]]
    # for the estimate, step 2 is costed with the whole answer as its one statement
    planned = [
        _verdict_item(t, judges[0], [t.prediction])
        for t in tasks
        if "RL_F" in metrics and not _verdicts_done(t, judges[0], log)
    ]
    if options.dry_run:
        print_dry_run(_requests(pending + planned), judges)
        print(f"{len(first) - len(pending)} of {len(first)} step-one items already answered in {log.path}")
        return None
    if pending or planned:
        _confirm(pending + planned, judges, cache, options.yes)
    if pending:
        _ask(pending, log, cache, outcome, options.show_progress)
    second = []
    for task in tasks if "RL_F" in metrics else ():
        done, statements = log.lookup(_step_one_items([task], judges, ["RL_F"])[0])
        if done and statements:
            second.append(_verdict_item(task, judges[0], statements))
    pending_second = [i for i in second if not log.lookup(i)[0]]
    if pending_second:
        _ask(pending_second, log, cache, outcome, options.show_progress)
    _collect(tasks, judges, metrics, log, outcome)
    return outcome


def _verdicts_done(task: MtragTask, judge: JudgeConfig, log: _Log) -> bool:
    done, statements = log.lookup(_step_one_items([task], [judge], ["RL_F"])[0])
    return done and (not statements or log.lookup(_verdict_item(task, judge, statements))[0])


def _collect(
    tasks: Sequence[MtragTask], judges: Sequence[JudgeConfig], metrics: Sequence[str], log: _Log, outcome: LlmJudgements
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


def _rl_f(task: MtragTask, judge: JudgeConfig, log: _Log) -> float | None:
    done, statements = log.lookup(_step_one_items([task], [judge], ["RL_F"])[0])
    if not done:
        return None
    if not statements:
        return faithfulness_score(None)
    done, verdicts = log.lookup(_verdict_item(task, judge, statements))
    return faithfulness_score(verdicts) if done else None
