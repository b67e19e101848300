"""The prompts an embedder's queries and documents are encoded with.

Three sources, in this order of precedence for the query side:

1. the alias's own prompt (``ModelSpec.query_prompt`` / ``query_prompt_name``);
2. an instruction template (``ModelSpec.instruction_template`` or ``--instruction-template``) with ``{task}``
   filled by a task description: ``--instruction``, else the task card's ``instruction``, else
   ``DEFAULT_TASK`` below;
3. the checkpoint's own named prompts (``prompts`` / ``default_prompt_name`` in
   ``config_sentence_transformers.json``), chosen as sentence-transformers' ``encode_query`` does: the
   ``query`` prompt, else the default prompt.

Documents take the alias's ``doc_prompt`` when it sets one, else the checkpoint's prompt as
``encode_document`` chooses it: the first of ``document``, ``passage``, ``corpus``, else the default prompt.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mtrbench.infra.errors import UserInputError

PLACEHOLDER = "{task}"
# The task description instruction-tuned embedders get on conversational tasks unless the task card or
# --instruction says otherwise. The query text is the serialized conversation (or its rewrite), so the
# description names both the conversation and its last question.
DEFAULT_TASK = (
    "Given a conversation between a user and an assistant, retrieve passages that answer the user's latest question"
)
QUERY_PROMPT_NAME = "query"  # sentence-transformers' encode_query
DOCUMENT_PROMPT_NAMES = ("document", "passage", "corpus")  # encode_document, first present wins


def fill_template(template: str, task: str, origin: str) -> str:
    """The query prompt: ``template`` with ``{task}`` replaced (other braces are left as written)."""
    if PLACEHOLDER not in template:
        raise UserInputError(
            f"{origin}: instruction template {template!r} has no {PLACEHOLDER} placeholder for the task description"
        )
    if not task.strip():
        raise UserInputError(f"{origin}: the task description filled into {template!r} is empty")
    return template.replace(PLACEHOLDER, task)


def checkpoint_query_prompt(prompts: Mapping[str, str], default_prompt_name: str | None) -> str:
    """The prompt sentence-transformers' ``encode_query`` applies when it is given none."""
    if QUERY_PROMPT_NAME in prompts:
        return prompts[QUERY_PROMPT_NAME] or ""
    return _default(prompts, default_prompt_name)


def checkpoint_doc_prompt(prompts: Mapping[str, str], default_prompt_name: str | None) -> str:
    """The prompt sentence-transformers' ``encode_document`` applies when it is given none."""
    for name in DOCUMENT_PROMPT_NAMES:
        if name in prompts:
            return prompts[name] or ""
    return _default(prompts, default_prompt_name)


def _default(prompts: Mapping[str, str], default_prompt_name: str | None) -> str:
    return (prompts.get(default_prompt_name) or "") if default_prompt_name else ""


@dataclass(frozen=True)
class InstructionRequest:
    """What the user asked for: a task description and/or a template; None: the model's / the card's."""

    instruction: str | None = None  # --instruction (or a task card's ``instruction``)
    template: str | None = None  # --instruction-template; None: the alias's


@dataclass(frozen=True)
class AppliedPrompts:
    query: str
    doc: str
    query_source: str  # alias | instruction | checkpoint | none
    doc_source: str  # alias | checkpoint | none
    template: str = ""  # the instruction template applied, "" when none
    task: str = ""  # the task description filled into it

    def recorded(self) -> dict[str, str]:
        """Settings beyond the prompts themselves (absent when no template applies: older results stay as
        they were)."""
        return {"instruction_template": self.template, "instruction": self.task} if self.template else {}


def choose_prompts(
    alias_query: str,
    alias_doc: str,
    alias_template: str,
    request: InstructionRequest,
    checkpoint: Mapping[str, str],
    default_prompt_name: str | None,
    model: str,
) -> AppliedPrompts:
    """The query and document prompts, by the precedence in this module's docstring."""
    template = request.template if request.template is not None else alias_template
    if request.instruction is not None and not template:
        raise UserInputError(
            f"--instruction fills a model's instruction template, and '{model}' has none: "
            f"add --instruction-template 'Instruct: {PLACEHOLDER}\\nQuery: ' (or the model's own format)"
        )
    task = ""
    if alias_query:
        query, query_source = alias_query, "alias"
    elif template:
        task = request.instruction if request.instruction is not None else DEFAULT_TASK
        origin = "--instruction-template" if request.template is not None else f"model '{model}'"
        query, query_source = fill_template(template, task, origin), "instruction"
    else:
        query = checkpoint_query_prompt(checkpoint, default_prompt_name)
        query_source = "checkpoint" if query else "none"
    if alias_doc:
        doc, doc_source = alias_doc, "alias"
    else:
        doc = checkpoint_doc_prompt(checkpoint, default_prompt_name)
        doc_source = "checkpoint" if doc else "none"
    return AppliedPrompts(query, doc, query_source, doc_source, template if query_source == "instruction" else "", task)


def unused_checkpoint_prompts(applied: AppliedPrompts, checkpoint: Mapping[str, str]) -> list[str]:
    """Names of the checkpoint's non-empty prompts when the model is evaluated with no prompt at all (the
    checkpoint was trained with them: scores without them are not the model's)."""
    if applied.query or applied.doc:
        return []
    return sorted(name for name, text in checkpoint.items() if text)
