"""The main path: plan -> queries -> retrieve -> score -> write, one :class:`Result` per history."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from mtrbench.data import load_task
from mtrbench.data.cards import TaskCard
from mtrbench.data.model import TaskData, first_conversations, without_queries
from mtrbench.infra.errors import TooManyFailures
from mtrbench.llm.redact import Redactor
from mtrbench.models.protocols import declared_revision
from mtrbench.pipeline.card_instruction import with_card_instruction
from mtrbench.pipeline.histories import applicable, write_texts
from mtrbench.pipeline.known_plans import known_finished, remember, request_key
from mtrbench.pipeline.partial_corpus import partial_corpus, with_every_judgment
from mtrbench.pipeline.plan import EvalConfig, Plan, SkippedResult, make_plan
from mtrbench.pipeline.ptkb import with_ranked_statements
from mtrbench.pipeline.retrieval import index_corpus, retrieve
from mtrbench.pipeline.scoring import score
from mtrbench.pipeline.write import Timings, write_history
from mtrbench.results.partial_corpus import PartialCorpus
from mtrbench.results.result import Result
from mtrbench.retrieve.base import Retriever
from mtrbench.retrieve.builder import ModelInput, assemble, resolve
from mtrbench.retrieve.options import RetrieverOptions

__all__ = ["EvalConfig", "SkippedResult", "run_eval", "first_conversations", "command_line"]


def run_eval(
    model: ModelInput,
    task_name: str | TaskCard,
    config: EvalConfig,
    retriever_options: RetrieverOptions | None = None,
    progress: Callable[[str], None] | None = None,
    retriever: Retriever | None = None,
    on_skip: Callable[[SkippedResult], None] | None = None,
    task: TaskData | None = None,
) -> list[Result]:
    """``retriever``: one built already (a sweep's cell, a run over several tasks); else built from ``model``.
    Histories whose finished result exists are skipped per ``config.overwrite`` (reported to ``on_skip``); when
    all are, the task is not even loaded and the list is empty. ``task``: data built in Python (with its card as
    ``task_name``)."""
    say = progress or (lambda message: None)
    options = retriever_options or RetrieverOptions()
    resolved = resolve(model)  # unknown names fail before anything slow starts
    if retriever is None:  # built here: with the card's task description, as eval and evaluate() build it
        options = with_card_instruction(options, resolved, task_name)
    key = request_key(resolved, task_name, config, options) if task is None else None  # Python data: not known
    if retriever is None and key is not None:
        finished = known_finished(key, resolved.requested, task_name, config.overwrite)
        if finished is not None:  # every history finished, as an earlier plan of this request says: no load
            for skipped in finished:
                (on_skip or (lambda s: None))(skipped)
            return []
    started = time.perf_counter()
    if retriever is None:
        say(f"Loading model {resolved.requested}")
        retriever = assemble(resolved, options)
    load_model = time.perf_counter() - started
    max_length_set = options.loading.max_length is not None
    identified = resolved.obj is None or declared_revision(resolved.obj) is not None
    plan = make_plan(resolved.requested, task_name, config, retriever, max_length_set, on_skip, identified)
    remember(key, plan)
    if not plan.histories:
        return []
    t0 = time.perf_counter()
    loaded = task is None  # data built in Python has no files to read its judgments from again
    task, partial = _as_scored(task if task is not None else _load(plan, config, say), plan, config, loaded)
    load_task_s = time.perf_counter() - t0
    planned = {p.history.name: p for p in plan.histories}
    written = write_texts(
        applicable([p.history for p in plan.histories], task, config.skip_inapplicable),
        task,
        config.rewriter,
        say,
        reply_logs={name: p.paths.rewriter_log for name, p in planned.items()},
    )
    if written is None:  # dry run: the prompts were shown, nothing to evaluate
        return []
    histories, failed = written
    histories = with_ranked_statements(histories, task, retriever.name)
    timings = Timings(load_model, load_task_s, index_corpus(retriever, task, say))
    results = []
    for history in histories:
        scored_task = without_queries(task, history.excluded)  # its model failed on them: no text, no score
        retrieved = retrieve(retriever, scored_task, history, config.fmt, config.truncate, config.top_k, say)
        scored = score(
            scored_task,
            retrieved.run,
            plan.measures,
            plan.card.relevance_level,
            config.analyses,
            plan.protocol,
            partial,
        )
        planned_history = replace(planned[history.name], history=history)
        results.append(write_history(plan, planned_history, scored_task, retriever, config, retrieved, scored, timings))
    say(f"Done in {time.perf_counter() - started:.1f}s")
    if failed:  # the other histories are written; the command still fails, naming what did
        raise TooManyFailures("; ".join(failed), results)
    return results


def _as_scored(task: TaskData, plan: Plan, config: EvalConfig, loaded: bool) -> tuple[TaskData, PartialCorpus | None]:
    """The task as its histories are scored (``--limit``'s first conversations) and what its corpus lacks: under an
    official protocol the judgments naming passages outside a partial corpus are read again and count, as the
    organisers score them (only for a task ``loaded`` from its files)."""
    partial = partial_corpus(task, scored=False)
    if partial is not None and plan.protocol.is_official and loaded:
        every = with_every_judgment(task, plan.card, config.data_dir)
        task, partial = (task, partial) if every is None else (every, replace(partial, scored=True))
    if config.limit is not None:
        task = first_conversations(task, config.limit)
    return task, partial


def _load(plan: Plan, config: EvalConfig, say: Callable[[str], None]) -> TaskData:
    say(f"Loading task {plan.card.name} ({plan.split})")
    return load_task(plan.card, split=config.split, data_dir=config.data_dir, corpus_path=config.corpus_path)


def command_line(argv: list[str]) -> str:
    """The reproducing command as recorded in results; a URL's user:password shows as ``***``."""
    import shlex

    hide_userinfo = Redactor()
    return shlex.join(["mtrbench", *(hide_userinfo(a) if "://" in a else a for a in argv)])
