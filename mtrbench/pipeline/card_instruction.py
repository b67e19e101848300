"""A task card's ``instruction`` (the task description an instruction-tuned embedder's template is filled with),
applied the same way by ``mtrbench eval`` and ``mtrbench.evaluate``: per task, unless the caller gave one."""

from __future__ import annotations

from mtrbench.data.cards import TaskCard
from mtrbench.retrieve.builder import ResolvedModel
from mtrbench.retrieve.options import RetrieverOptions


def with_card_instruction(options: RetrieverOptions, model: ResolvedModel, task: str | TaskCard) -> RetrieverOptions:
    """``options`` with the card's instruction for a model that has an instruction template (its alias's or
    ``instruction_template``), unless ``instruction`` is set already; else ``options`` unchanged. Options that
    differ from the ones a retriever was built with mean another query prompt: the caller builds it again."""
    loading = options.loading
    template = loading.instruction_template
    if template is None:
        template = model.spec.instruction_template if model.spec is not None else ""
    if loading.instruction is not None or not template:
        return options
    if isinstance(task, TaskCard):
        instruction = task.instruction
    else:
        from mtrbench.data import resolve_card  # deferred: a typo'd name fails before the card index loads

        instruction = resolve_card(task).instruction
    return options if instruction is None else options.with_values(instruction=instruction)
