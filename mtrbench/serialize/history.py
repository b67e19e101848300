"""History strategies (``--history``): which parts of a conversation form the query.

Every strategy yields the formatted history lines (oldest first) and the current question line
separately, so truncation can drop history while keeping the question whole.

Role prefixes mark turns only where there is history: a query whose serialized history is empty
(a first turn, ``current``, ``window:1``, or every history line dropped by truncation) is the bare
question, so a plain BEIR query scores exactly as beir scores it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from mtrbench.data.model import ASSISTANT, GOLD_REASONING, USER, ConversationalQuery, Message
from mtrbench.infra.errors import MtrbenchError, unknown_name
from mtrbench.infra.numeric import ascii_digits
from mtrbench.serialize.expansion import EXPANSION_KINDS, expanded_query
from mtrbench.serialize.ptkb import PtkbChoice

HISTORY_FIRST = "history-first"
CURRENT_FIRST = "current-first"
DEFAULT_HISTORY = "full"  # mteb's and MTR-SUITE's serialization; a first turn is the bare question, as in BEIR


@dataclass(frozen=True)
class QueryFormat:
    """Role prefixes (MTR-SUITE §6.3 uses ``User:``/``Agent:``), separator and order."""

    user_prefix: str = "User: "
    assistant_prefix: str = "Agent: "
    separator: str = "\n"
    order: str = HISTORY_FIRST

    def __post_init__(self) -> None:
        if self.order not in (HISTORY_FIRST, CURRENT_FIRST):
            raise MtrbenchError(f"order must be '{HISTORY_FIRST}' or '{CURRENT_FIRST}', got '{self.order}'")

    def line(self, message: Message) -> str:
        prefix = self.user_prefix if message.role == USER else self.assistant_prefix
        return f"{prefix}{message.content}"


@dataclass(frozen=True)
class Serialized:
    history: tuple[str, ...]  # formatted lines, oldest first
    current: str  # the question's line as it reads beside history (role-prefixed where the strategy prefixes)
    fmt: QueryFormat
    question: str = ""  # the bare question: the whole text when no history is kept

    def __post_init__(self) -> None:
        if not self.question:
            object.__setattr__(self, "question", self.current)

    def text(self, history_text: str | None = None) -> str:
        """The query string; ``history_text`` replaces the joined history (after truncation)."""
        hist = self.history_text() if history_text is None else history_text
        if not hist:
            return self.question
        if self.fmt.order == HISTORY_FIRST:
            return f"{hist}{self.fmt.separator}{self.current}"
        return f"{self.current}{self.fmt.separator}{hist}"

    def history_text(self) -> str:
        lines = self.history if self.fmt.order == HISTORY_FIRST else tuple(reversed(self.history))
        return self.fmt.separator.join(lines)


@dataclass(frozen=True)
class HistoryStrategy:
    """``select`` picks the history messages; ``prefixed`` says whether lines get role prefixes.

    A model-backed strategy (``model_kind`` "rewrite" or "summary") reads texts a model wrote beforehand,
    per query id (``with_texts``); serialization itself never calls a model. A query without a text (its
    request failed after retries) is never serialized: the step that computed the texts leaves it out and
    counts it. What a strategy needs before it can be used (eval, generate and rag read the same fields):
    ``needs_gold_rewrite``, the task's gold rewrites; ``needs_rewriter``, an LLM rewriter writing its texts
    (``model_kind`` alone is also set for texts the user's Python code writes).
    """

    name: str
    select: Callable[[ConversationalQuery], tuple[list[Message], str]]
    prefixed: bool = True
    model_kind: str | None = None
    texts: Mapping[str, str] | None = None
    prefix_first_turn: bool = False  # MTR-SUITE's scripts: a query without history reads "User: q" too
    needs_gold_rewrite: bool = False
    needs_rewriter: bool = False
    ptkb: PtkbChoice | None = None  # --ptkb: personal statements between the history and the question
    reasoning: bool = False  # the turn's gold retrieval reasoning (RECOR) as the newest history line

    def with_texts(self, texts: Mapping[str, str]) -> HistoryStrategy:
        return replace(self, texts=texts)

    def with_first_turn_prefixed(self) -> HistoryStrategy:
        """The same strategy, its lines prefixed even where no history is kept (only prefixed strategies)."""
        return replace(self, prefix_first_turn=self.prefixed)

    def with_ptkb(self, ptkb: PtkbChoice | None) -> HistoryStrategy:
        return replace(self, ptkb=ptkb)

    def __call__(self, query: ConversationalQuery, fmt: QueryFormat) -> Serialized:
        serialized = self._serialize(query, fmt)
        if self.reasoning:  # history, so truncation drops it before the question (after the older turns)
            serialized = replace(serialized, history=serialized.history + self._reasoning_line(query))
        if self.ptkb is None:
            return serialized
        # the statements read as the newest history: truncation drops them after the conversation, never the question
        return replace(serialized, history=serialized.history + self.ptkb.lines(query))

    def _reasoning_line(self, query: ConversationalQuery) -> tuple[str, ...]:
        text = query.meta.get(GOLD_REASONING)
        if text:
            return (f"Reasoning: {text}",)
        if query.has_positive:
            raise MtrbenchError(
                f"--history {self.name}: query '{query.qid}' has no gold retrieval reasoning "
                "(RECOR tasks publish one per turn); use current, full, window:K, questions or last-response"
            )
        return ()  # never scored (no gold), so its text cannot change a metric

    def _serialize(self, query: ConversationalQuery, fmt: QueryFormat) -> Serialized:
        if self.model_kind is not None:
            return self._from_model(query, fmt)
        history, current = self.select(query)
        if not self.prefixed:
            return Serialized(history=tuple(m.content for m in history), current=current, fmt=fmt)
        line = fmt.line(Message(USER, current))
        return Serialized(
            history=tuple(fmt.line(m) for m in history),
            current=line,
            fmt=fmt,
            question=line if self.prefix_first_turn else current,
        )

    def _from_model(self, query: ConversationalQuery, fmt: QueryFormat) -> Serialized:
        if self.texts is None:
            raise MtrbenchError(
                f"--history {self.name}: the model's texts were not computed before serializing "
                "(only `mtrbench eval --rewriter-model` and `mtrbench generate` run the rewriter)"
            )
        text = self.texts.get(query.qid)
        if text is None:  # another history's text under this one's name would be a wrong number
            raise MtrbenchError(
                f"--history {self.name}: no text for query {query.qid} (the model failed on it); "
                "a query without one is left out of this history's scores, never serialized"
            )
        if self.model_kind == "rewrite":
            return Serialized(history=(), current=text, fmt=fmt)
        if self.model_kind in EXPANSION_KINDS:  # the question and the model's passages, as the query text
            return Serialized(history=(), current=expanded_query(self.model_kind, query.query, text), fmt=fmt)
        # summary: the summary stands for the history, the question stays whole and last to go
        return Serialized(
            history=(text,) if text else (), current=fmt.line(Message(USER, query.query)), fmt=fmt, question=query.query
        )


def _current(q: ConversationalQuery) -> tuple[list[Message], str]:
    return [], q.query


def _full(q: ConversationalQuery) -> tuple[list[Message], str]:
    return list(q.history), q.query


def _window(k: int) -> Callable[[ConversationalQuery], tuple[list[Message], str]]:
    # k counts the current question, as ChatQA's messages[-5:] does: window:5 = question + 4 before it.
    def select(q: ConversationalQuery) -> tuple[list[Message], str]:
        return (list(q.history[-(k - 1) :]) if k > 1 else []), q.query

    return select


def _questions(q: ConversationalQuery) -> tuple[list[Message], str]:
    return [m for m in q.history if m.role == USER], q.query


def _last_response(q: ConversationalQuery) -> tuple[list[Message], str]:
    # CORAL §4: all previous questions, then the last response, then the current question.
    history = [m for m in q.history if m.role == USER]
    last = next((m for m in reversed(q.history) if m.role == ASSISTANT), None)
    return history + ([last] if last else []), q.query


def _rewrite(q: ConversationalQuery) -> tuple[list[Message], str]:
    if q.gold_rewrite:
        return [], q.gold_rewrite
    if q.has_positive:
        raise MtrbenchError(f"--history rewrite: query '{q.qid}' has no gold rewrite")
    return [], q.query  # never scored (no gold), so its text cannot change a metric


STRATEGY_NAMES = (
    "current",
    "full",
    "window:K",
    "questions",
    "last-response",
    "rewrite",
    "reasoning",
    "full+reasoning",
    "rewrite:llm",
    "summary:llm",
    *EXPANSION_KINDS,
)
# name -> what the model writes; query2doc, hyde, mugi: pseudo-documents (serialize/expansion.py)
MODEL_STRATEGIES = {"rewrite:llm": "rewrite", "summary:llm": "summary", **{k: k for k in EXPANSION_KINDS}}
# ``--history all``: every strategy that needs no model (window:K at ChatQA's K=5)
ALL_HISTORIES = ("current", "full", "window:5", "questions", "last-response", "rewrite")
FULL = HistoryStrategy("full", _full)


def get_strategy(spec: str) -> HistoryStrategy:
    spec = spec.strip()
    if spec.startswith("window"):
        _, _, k = spec.partition(":")
        if not ascii_digits(k) or int(k) < 1:
            raise MtrbenchError(f"--history {spec}: use window:K with K >= 1 (messages, current question included)")
        return HistoryStrategy(spec, _window(int(k)))
    if spec in MODEL_STRATEGIES:
        return HistoryStrategy(spec, _full, model_kind=MODEL_STRATEGIES[spec], needs_rewriter=True)
    fixed = {
        "current": HistoryStrategy("current", _current, prefixed=False),
        "full": FULL,
        "questions": HistoryStrategy("questions", _questions),
        "last-response": HistoryStrategy("last-response", _last_response),
        "rewrite": HistoryStrategy("rewrite", _rewrite, prefixed=False, needs_gold_rewrite=True),
        # RECOR's ablations: the question with its turn's gold retrieval reasoning, and with the history too
        "reasoning": HistoryStrategy("reasoning", _current, prefixed=False, reasoning=True),
        "full+reasoning": HistoryStrategy("full+reasoning", _full, reasoning=True),
    }
    if spec not in fixed:
        raise unknown_name("history strategy", spec, STRATEGY_NAMES)
    return fixed[spec]


def check_strategy_applies(strategy: HistoryStrategy, task_name: str, has_rewrites: bool) -> None:
    if strategy.needs_gold_rewrite and not has_rewrites:
        raise MtrbenchError(
            f"--history rewrite: task '{task_name}' has no gold rewrites; "
            f"use current, full, window:K, questions or last-response"
        )


def check_reasoning_applies(strategy: HistoryStrategy, task_name: str, queries: Sequence[ConversationalQuery]) -> None:
    """A reasoning strategy on a task that publishes no retrieval reasoning: one error before any search."""
    if strategy.reasoning and not any(q.meta.get(GOLD_REASONING) for q in queries):
        raise MtrbenchError(
            f"--history {strategy.name}: task '{task_name}' has no gold retrieval reasoning (RECOR tasks publish "
            "one per turn); use current, full, window:K, questions or last-response"
        )
