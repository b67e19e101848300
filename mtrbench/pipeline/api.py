"""``mtrbench.evaluate``: the Python entry point, for named models and for model objects of the user's own."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from mtrbench.data.python import PythonTask
from mtrbench.generation.model_history import RewriterOptions
from mtrbench.infra.errors import UserInputError
from mtrbench.infra.reporting import progress_messages
from mtrbench.pipeline.card_instruction import with_card_instruction
from mtrbench.pipeline.evaluate import run_eval
from mtrbench.pipeline.histories import HistoryChoice, resolve_history
from mtrbench.pipeline.known_plans import finished_before_loading
from mtrbench.pipeline.plan import EvalConfig, SkippedResult, check_before_loading
from mtrbench.results.result import Result
from mtrbench.retrieve.builder import ModelInput, ResolvedModel, assemble, resolve
from mtrbench.retrieve.options import RetrieverOptions
from mtrbench.serialize.history import ALL_HISTORIES, DEFAULT_HISTORY, QueryFormat
from mtrbench.serialize.truncate import DEFAULT_TRUNCATE

TaskInput = str | PythonTask


def evaluate(
    model: ModelInput,
    tasks: TaskInput | Sequence[TaskInput],
    *,
    history: HistoryChoice | Sequence[HistoryChoice] = DEFAULT_HISTORY,
    truncate: str = DEFAULT_TRUNCATE,
    query_format: QueryFormat | None = None,
    top_k: int = 100,
    k_values: Sequence[int] | None = None,
    metrics: Sequence[str] | None = None,
    split: str | None = None,
    output_dir: str | Path = "results",
    overwrite: str | None = None,
    limit: int | None = None,
    rewriter: RewriterOptions | None = None,
    options: RetrieverOptions | None = None,
    show_progress: bool = True,
    protocol: str | None = None,
    ptkb: str | None = None,
    **retriever_options: object,
) -> list[Result]:
    """Evaluate ``model`` on each task with each history; one :class:`Result` per (task, history), in order.

    ``model``: a name as ``--model`` takes it, a sentence-transformers model, or an object of a shape in
    ``mtrbench.models.protocols`` (encoder, conversation encoder, search object). ``tasks``: names, card or
    folder paths, or tasks built with ``mtrbench.make_task``. ``history``: names as ``--history`` takes them
    (``"all"`` too), functions ``Conversation -> str`` and rewriter objects. ``retriever_options``: single
    fields of :class:`RetrieverOptions` (``device="cpu"``, ``max_length=256``, ``alpha=0.5``...).
    ``protocol``: ``"official"`` or ``"trec_eval"`` as ``--protocol`` takes it; None: each task card's default.
    ``ptkb``: TREC iKAT's personal statements in the query, as ``--ptkb`` takes it (``"gold"``, ``"top:3"``...);
    None: none.

    ``overwrite``: mteb's strategies. Default ``only-missing`` (a finished result is loaded, not recomputed),
    except for model objects and Python histories, which are always evaluated: nothing tells a changed object
    from the one that wrote the finished file. Given explicitly, only-missing/never reuse a model object's result
    only when the object declares a ``revision`` (its name and revision are its identity, as for the embedding
    cache); without one its result is evaluated again (never: refused).
    """
    options = (options or RetrieverOptions()).with_values(show_progress=show_progress, **retriever_options)
    resolved = resolve(model)
    choices = _histories(history)
    python_history = any(not isinstance(c, str) for c in choices)
    names = [resolve_history(c).name for c in choices]
    if overwrite is None:
        overwrite = "always" if resolved.is_object or python_history else "only-missing"
    config = EvalConfig(
        histories=choices,
        truncate=truncate,
        fmt=query_format or QueryFormat(),
        top_k=top_k,
        k_values=list(k_values) if k_values else None,
        metrics=list(metrics) if metrics else None,
        split=split,
        output_dir=Path(output_dir),
        skip_inapplicable=history == "all",
        limit=limit,
        overwrite=overwrite,
        rewriter=rewriter,
        protocol=protocol,
        ptkb=None if ptkb == "none" else ptkb,
    )
    check_before_loading(config, [t.card if isinstance(t, PythonTask) else t for t in _tasks(tasks)])
    return _evaluate_tasks(resolved, _tasks(tasks), config, options, names, progress_messages(show_progress))


def _evaluate_tasks(
    resolved: ResolvedModel,
    tasks: list[TaskInput],
    config: EvalConfig,
    options: RetrieverOptions,
    names: list[str],
    say: Callable[[str], None],
) -> list[Result]:
    """Each task in turn, the model built once and shared until a card's instruction asks for another prompt."""
    skipped: list[SkippedResult] = []
    retriever = None  # loaded for the first task with something to evaluate, then shared
    loaded_with = options
    results: list[Result] = []
    for task in tasks:
        card, data = (task.card, task.data) if isinstance(task, PythonTask) else (task, None)
        task_options = with_card_instruction(options, resolved, card)
        if task_options != loaded_with:  # the card's task description: another query prompt, so build again
            retriever, loaded_with = None, task_options
        if retriever is None and (
            data is not None or finished_before_loading(resolved, card, config, task_options) is None
        ):
            retriever = assemble(resolved, task_options)
        made = run_eval(
            resolved, card, config, task_options, progress=say, retriever=retriever, on_skip=skipped.append, task=data
        )
        finished: dict[str | None, Result] = {s.history: Result.load(s.path) for s in skipped}
        skipped.clear()
        by_history: dict[str | None, Result] = {**finished, **{r.history: r for r in made}}
        results.extend(by_history[name] for name in names if name in by_history)
    return results


def _histories(history: HistoryChoice | Sequence[HistoryChoice]) -> list[HistoryChoice]:
    if history == "all":
        return list(ALL_HISTORIES)
    if isinstance(history, str):
        return [h.strip() for h in history.split(",") if h.strip()]
    if isinstance(history, Sequence):
        return list(history)
    return [history]


def _tasks(tasks: TaskInput | Sequence[TaskInput]) -> list[TaskInput]:
    listed = [tasks] if isinstance(tasks, (str, PythonTask)) else list(tasks)
    if not listed:
        raise UserInputError("evaluate: no task given")
    return listed
