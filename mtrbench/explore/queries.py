"""The query each turn's retriever saw, recomputed: results record the serialization settings and how many
queries truncation touched, not the texts, so the texts are rebuilt here with eval's own serializer and
truncator from the result's settings (history strategy, query format, protocol, truncation, the retriever's
max length, prompt and tokenizer).

A query is split into what the retriever saw (``kept``) and what truncation cut (``cut_before`` /
``cut_after``), so a page can strike the cut part out. A model-backed history (``rewrite:llm``,
``summary:llm``) reads the texts its rewriter wrote, which results do not keep: its turns say so instead.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from mtrbench.data.cards import TaskCard
from mtrbench.data.model import ConversationalQuery
from mtrbench.infra.errors import MtrbenchError
from mtrbench.results.result import Result
from mtrbench.serialize.history import QueryFormat, get_strategy
from mtrbench.serialize.truncate import Truncator

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class QueryText:
    kept: str  # what the retriever encoded (its prompt left out)
    cut_before: str = ""  # text truncation dropped before the kept part
    cut_after: str = ""  # ... and after it
    note: str = ""  # why the text is missing or approximate

    def as_json(self) -> dict[str, str]:
        fields = {"kept": self.kept, "cut_before": self.cut_before, "cut_after": self.cut_after, "note": self.note}
        return {k: v for k, v in fields.items() if v}


def split_cut(full: str, kept: str) -> QueryText:
    """``kept`` located in ``full``: the parts before and after it were cut (left truncation keeps an end of
    the history, right truncation a beginning); a kept text that is no substring (the question's own
    beginning, history all dropped) is shown with the whole serialized text as cut."""
    if kept == full:
        return QueryText(kept)
    at = full.rfind(kept) if kept else -1
    if at < 0:
        return QueryText(kept, cut_before=full)
    return QueryText(kept, cut_before=full[:at], cut_after=full[at + len(kept) :])


def _truncator(result: Result, note: list[str]) -> Truncator:
    """The truncator eval used: the retriever's tokenizer, max length and prompt, rebuilt from the result."""
    settings = result.result_settings
    side = settings.truncate or "none"
    if side == "none" or not int((result.truncation or {}).get("truncated") or 0):
        return Truncator(None, None, side="none")  # nothing was cut: no tokenizer needed
    from mtrbench.retrieve import build_retriever  # deferred: loads torch and the model's tokenizer

    retriever_settings = dict(settings.retriever or {})
    try:
        retriever = build_retriever(
            result.requested_model,
            device="cpu",
            max_length=retriever_settings.get("max_length"),
            show_progress=False,
        )
    except (MtrbenchError, OSError, ValueError) as exc:
        note.append(f"truncation not recomputed ({result.requested_model} could not be loaded: {exc})")
        return Truncator(None, None, side="none")
    return Truncator(retriever.tokenizer, retriever.max_length, prompt=retriever.query_prompt, side=side)


def _prefixes_first_turn(result: Result, card: TaskCard) -> bool:
    from mtrbench.measures.protocols import for_card  # deferred: loads pytrec_eval

    protocol = result.result_settings.protocol
    return bool(protocol) and for_card(protocol, card).prefix_first_turn


def serialized_queries(result: Result, card: TaskCard, queries: Sequence[ConversationalQuery]) -> dict[str, QueryText]:
    """qid -> the query text the result's retriever saw, split into kept and cut parts."""
    settings = result.result_settings
    strategy = get_strategy(settings.history or "full")
    if strategy.model_kind is not None:
        missing = QueryText("", note=f"--history {strategy.name}: the rewriter's texts are not kept in results")
        return {q.qid: missing for q in queries}
    if _prefixes_first_turn(result, card):
        strategy = strategy.with_first_turn_prefixed()
    fmt = QueryFormat(**dict(settings.query_format or {}))
    notes: list[str] = []
    truncator = _truncator(result, notes)
    texts = {}
    for q in queries:
        serialized = strategy(q, fmt)
        split = split_cut(serialized.text(), truncator(serialized))
        texts[q.qid] = QueryText(split.kept, split.cut_before, split.cut_after, "; ".join(notes))
    if notes:
        log.warning("%s: %s", result.path, notes[0])
    return texts
