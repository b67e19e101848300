"""The histories an evaluation serializes queries with: built-in strategies by name (``--history``), the
model-backed ones (``rewrite:llm``, ``summary:llm``) whose texts an LLM writes first, and Python ones (a
function ``Conversation -> str`` or a rewriter object) whose texts the user's code writes, recorded by name."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mtrbench.data.model import TaskData
from mtrbench.generation.model_history import ModelHistoryReport, RewriterOptions, compute_model_history
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import ModelError, UserInputError
from mtrbench.infra.numeric import json_lines
from mtrbench.llm.failure_rate import JudgeFailures, failure_line, most_common
from mtrbench.models.protocols import Conversation, Rewriter, object_name
from mtrbench.serialize.history import (
    FULL,
    HistoryStrategy,
    check_reasoning_applies,
    check_strategy_applies,
    get_strategy,
)

log = logging.getLogger(__name__)

PYTHON_PREFIX = "python:"
HistoryChoice = str | Callable[[Conversation], str] | Rewriter


@dataclass(frozen=True)
class PythonHistory:
    """A history computed by the user's code: one query text per turn."""

    name: str
    write: Callable[[Conversation], str]


@dataclass
class History:
    strategy: HistoryStrategy
    python: PythonHistory | None = None
    report: dict[str, Any] = field(default_factory=dict)  # what writing the texts took (model-backed, Python)
    # queries left out of this history's scores: its model failed on them (no other history stands in)
    excluded: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        return self.strategy.name


def resolve_history(choice: HistoryChoice) -> History:
    if isinstance(choice, str):
        return History(get_strategy(choice))
    if isinstance(choice, Rewriter):
        python = PythonHistory(object_name(choice), choice.rewrite)
    elif callable(choice):
        python = PythonHistory(object_name(choice), choice)
    else:
        raise UserInputError(
            f"history {choice!r}: give a strategy name, a function (conversation -> query text) or "
            "an object with rewrite(conversation)"
        )
    # the texts stand alone as the query, exactly as a rewrite does; truncation still keeps them whole first
    return History(HistoryStrategy(PYTHON_PREFIX + python.name, FULL.select, model_kind="rewrite"), python)


def resolve_histories(choices: list[HistoryChoice], rewriter: RewriterOptions | None) -> list[History]:
    histories = [resolve_history(c) for c in choices]
    names = [h.name for h in histories]
    if len(set(names)) != len(names):
        raise UserInputError(
            f"history strategies named twice: {', '.join(sorted({n for n in names if names.count(n) > 1}))}"
        )
    needs_model = [h.name for h in histories if h.strategy.needs_rewriter]
    if needs_model and rewriter is None:
        raise UserInputError(
            f"--history {', '.join(needs_model)} needs a rewriter model: pass --rewriter-model (and "
            "--rewriter-base-url for a local server or hf://MODEL)"
        )
    return histories


def applicable(histories: list[History], task: TaskData, skip_inapplicable: bool) -> list[History]:
    if skip_inapplicable and not task.has_rewrites:
        histories = [h for h in histories if not h.strategy.needs_gold_rewrite]
    for history in histories:
        check_strategy_applies(history.strategy, task.name, task.has_rewrites)
        check_reasoning_applies(history.strategy, task.name, task.queries)
    return histories


def write_texts(
    histories: list[History],
    task: TaskData,
    rewriter: RewriterOptions | None,
    say: Callable[[str], None],
    reply_logs: Mapping[str, Path] | None = None,
) -> tuple[list[History], list[str]] | None:
    """Each model-backed or Python history with its texts, and one message per model-backed history whose model
    failed on more than ``--max-failure-rate`` of its requests (no result for it). Within the limit, the queries
    its model failed on are left out of its scores (``History.excluded``), never given another history's text.
    ``reply_logs``: history name -> where its failed requests and malformed replies are logged (redacted).
    None after a dry run (prompts shown, nothing sent)."""
    ready, failed = [], []
    for history in histories:
        if history.python is not None:
            ready.append(_python_texts(history, task))
        elif history.strategy.model_kind:
            kind = history.strategy.model_kind
            say(f"Asking {rewriter.judge.model} for {kind} texts of {len(task.queries):,} queries")
            texts, report = compute_model_history(kind, task.queries, rewriter)
            if texts is None:
                continue
            log_path = (reply_logs or {}).get(history.name)
            if log_path is not None:
                _write_reply_log(log_path, report)
            problem = _too_many_failures(history.name, report, rewriter)
            if problem:
                failed.append(problem)
                continue
            excluded = frozenset(report.failed())
            if excluded:  # a counted warning even with --quiet
                where = f"; replies logged in {log_path}" if log_path is not None else ""
                log.warning(
                    f"warning: --history {history.name}: {report.failures} of {report.requested} {kind} requests "
                    f"failed after retries; those {len(excluded)} queries are left out of its scores "
                    f"(queries.excluded_rewriter_failed) and a re-run asks only them{where}"
                )
            ready.append(
                replace(
                    history, strategy=history.strategy.with_texts(texts), report=report.as_dict(), excluded=excluded
                )
            )
        else:
            ready.append(history)
    if rewriter is not None and rewriter.dry_run:
        return None
    return ready, failed


def _write_reply_log(path: Path, report: ModelHistoryReport) -> None:
    """The failed requests and malformed replies of one model-backed history (rewritten each run; removed when
    there is nothing to log)."""
    if not report.replies:
        if path.exists():
            path.unlink()
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json_lines(report.replies, path=path, ensure_ascii=False))


def _too_many_failures(name: str, report: ModelHistoryReport, rewriter: RewriterOptions) -> str | None:
    counts = JudgeFailures(
        report.model,
        report.failures,
        report.requested,
        most_common(report.failure_reasons),
        kind=f"--history {name}: rewriter",
        unit="requests",
    )
    line = failure_line([counts], rewriter.max_failure_rate)
    if line is None:
        return None
    return (
        f"{line}; no result written for it, the replies that succeeded are cached and a re-run asks only the "
        "failed ones"
    )


def _python_texts(history: History, task: TaskData) -> History:
    python = history.python
    texts = {}
    for query in task.queries:
        try:
            text = python.write(Conversation.of(query))
        except Exception as exc:  # the user's code: name it, with the query it failed on
            raise ModelError(f"history {python.name} failed on query {query.qid}: {type(exc).__name__}: {exc}") from exc
        if not isinstance(text, str):
            raise ModelError(
                f"history {python.name} returned {type(text).__name__} for query {query.qid}; expected "
                "the query text (str)"
            )
        texts[query.qid] = text
    report = {"kind": "python", "name": python.name, "queries": len(texts)}
    return replace(history, strategy=history.strategy.with_texts(texts), report=report)
