"""The shapes of model objects a user can evaluate from Python (``mtrbench.evaluate(model, tasks)``).

Each is a ``typing.Protocol``: any object with the methods qualifies, no base class to inherit. Optional
attributes, read when present:

- ``name`` and ``revision``: recorded in results and ``model_meta.json``; with a ``revision`` the corpus
  embeddings are cached (without one a changed model could not be told apart from the cached one).
- ``tokenizer`` and ``max_length``: the query is left-truncated with them, so the current question survives
  (``--truncate left``). Without a ``tokenizer``, those of a sentence-transformers model the object holds in an
  attribute (its ``tokenizer`` and ``max_seq_length``) are used; with none at all queries go to the encoder
  whole, with a warning (what the encoder then cuts cannot be counted).
- ``query_prompt`` / ``doc_prompt``: recorded in the settings (the encoder applies its own prompts).
- ``similarity``: ``"cosine"`` (default, beir's ``cos_sim``) or ``"dot"``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeAlias, runtime_checkable

import numpy as np
import torch

from mtrbench.data.model import ASSISTANT, USER, ConversationalQuery, Message

Embeddings: TypeAlias = np.ndarray | torch.Tensor | Sequence[Sequence[float]]
Run: TypeAlias = dict[str, dict[str, float]]  # qid -> doc id -> score, as pytrec_eval and beir take it


@dataclass(frozen=True)
class Conversation:
    """One evaluated user turn with the conversation before it, as a model that reads turns receives it.

    It carries no relevance judgments and no gold rewrite: a model cannot see what it is scored against.
    """

    qid: str
    conversation_id: str
    turn_id: int
    history: tuple[Message, ...]  # strictly before the question, oldest first
    question: str

    @property
    def turns(self) -> tuple[Message, ...]:
        """History and the current question as one list of messages."""
        return (*self.history, Message(USER, self.question))

    @property
    def previous_questions(self) -> list[str]:
        return [m.content for m in self.history if m.role == USER]

    @property
    def last_response(self) -> str | None:
        return next((m.content for m in reversed(self.history) if m.role == ASSISTANT), None)

    @classmethod
    def of(cls, query: ConversationalQuery) -> Conversation:
        return cls(query.qid, query.conversation_id, query.turn_id, tuple(query.history), query.query)


@runtime_checkable
class Encoder(Protocol):
    """beir's and mteb's (v1) dense model shape: queries as strings, documents as ``{"title", "text"}`` dicts;
    one row per input. mtrbench serializes (and truncates) each conversational query into the string."""

    def encode_queries(self, queries: list[str], **kwargs: object) -> Embeddings: ...

    def encode_corpus(self, corpus: list[dict[str, str]], **kwargs: object) -> Embeddings: ...


@runtime_checkable
class ConversationEncoder(Protocol):
    """An encoder that reads the turns itself (ConvDR, ChatRetriever-style): it gets :class:`Conversation`
    objects, not a serialized string; history strategies and truncation do not apply."""

    def encode_conversations(self, conversations: list[Conversation]) -> Embeddings: ...

    def encode_corpus(self, corpus: list[dict[str, str]], **kwargs: object) -> Embeddings: ...


@runtime_checkable
class SearchRetriever(Protocol):
    """Anything that is not an embedding model (a search engine, a learned sparse index, a fixed run).

    ``queries`` maps query id to the serialized query text; the reply maps query id to document id to score.
    An optional ``index(corpus)`` method receives ``{doc_id: {"title", "text"}}`` before the first search.
    """

    def search(self, queries: dict[str, str], top_k: int) -> Run: ...


@runtime_checkable
class Rewriter(Protocol):
    """A query rewriter in the user's code: one stand-alone query per conversation turn."""

    def rewrite(self, conversation: Conversation) -> str: ...


HistoryFunction = Callable[[Conversation], str]  # a history strategy as a plain function


def declared_revision(obj: object) -> str | None:
    """The ``revision`` a model object declares (a non-empty string), else None. With its name it is the object's
    identity: what lets its corpus embeddings be cached and a finished result of it be reused."""
    revision = getattr(obj, "revision", None)
    return revision.strip() if isinstance(revision, str) and revision.strip() else None


def object_name(obj: object) -> str:
    """The name a model or rewriter object is recorded by: its ``name`` attribute, else its class (a function:
    its qualified name)."""
    name = getattr(obj, "name", None)
    if isinstance(name, str) and name.strip():
        return name.strip()
    if callable(obj) and hasattr(obj, "__qualname__"):
        return f"{getattr(obj, '__module__', '') or ''}.{obj.__qualname__}".lstrip(".")
    kind = type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"
