"""Personal statements in the query (``--ptkb``): which of a conversation's PTKB statements (TREC iKAT's personal
text knowledge base, ``meta["ptkb"]`` of each query) join the serialized query.

* ``none``: no statement (the default; nothing is recorded);
* ``all``: every statement of the conversation, in the file's order;
* ``gold``: the turn's relevant statements (``meta["ptkb_provenance"]``, iKAT's ``ptkb_provenance`` or 2025's
  ``relevant_ptkbs``), in the file's order;
* ``top:K``: the K statements an encoder ranks highest for the turn's question (cosine similarity; ties by
  statement order), best first. ``top:K`` uses the retriever's own model when it is a sentence-transformers
  encoder; ``top:K@MODEL`` names one.

Layout (mtrbench.serialize.history): each chosen statement is one line ``Personal: <statement>`` placed between
the conversation's history and the current question (history-first: history, statements, question;
current-first: question, statements, history). Truncation treats the statement lines as the newest history:
``left`` drops the conversation's oldest text first, then the statements farthest from the question, and never
cuts the current question.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from mtrbench.data.model import ConversationalQuery
from mtrbench.infra.errors import MtrbenchError, UserInputError
from mtrbench.infra.numeric import ascii_digits

SimilarityFn = Callable[[str, list[str]], Sequence[float]]  # (question, statements) -> one score each
PTKB_PREFIX = "Personal: "
NONE = "none"
KINDS = ("none", "all", "gold", "top:K", "top:K@MODEL")


@dataclass(frozen=True)
class PtkbChoice:
    spec: str  # as given (what results record)
    kind: str  # all, gold, top
    k: int = 0
    encoder: str | None = None  # top:K@MODEL's model; None: the retriever's own
    ranking: Mapping[str, tuple[str, ...]] | None = None  # top:K: qid -> statement ids, best first

    def with_ranking(self, ranking: Mapping[str, tuple[str, ...]]) -> PtkbChoice:
        return replace(self, ranking=ranking)

    def statement_ids(self, query: ConversationalQuery) -> list[str]:
        ptkb = ptkb_of(query)
        if self.kind == "all":
            return list(ptkb)
        if self.kind == "gold":
            gold = {str(s) for s in query.meta.get("ptkb_provenance") or []}
            return [sid for sid in ptkb if sid in gold]
        if self.ranking is None:
            raise MtrbenchError(f"--ptkb {self.spec}: the statements were not ranked before serializing")
        return list(self.ranking.get(query.qid, ()))[: self.k]

    def lines(self, query: ConversationalQuery) -> tuple[str, ...]:
        """The statement lines of ``query``, in the order they are written (nearest the question last)."""
        ptkb = ptkb_of(query)
        return tuple(f"{PTKB_PREFIX}{ptkb[sid]}" for sid in self.statement_ids(query))


def ptkb_of(query: ConversationalQuery) -> dict[str, str]:
    ptkb = query.meta.get("ptkb")
    return {str(k): str(v) for k, v in ptkb.items()} if isinstance(ptkb, Mapping) else {}


def parse_ptkb(spec: str | None) -> PtkbChoice | None:
    """``--ptkb``; None for ``none``."""
    text = (spec or NONE).strip()
    if text == NONE:
        return None
    if text in ("all", "gold"):
        return PtkbChoice(text, text)
    if text.startswith("top:"):
        count, _, encoder = text[len("top:") :].partition("@")
        if ascii_digits(count) and int(count) >= 1 and (encoder.strip() or not _):
            return PtkbChoice(text, "top", int(count), encoder.strip() or None)
    raise UserInputError(f"--ptkb {text}: use one of {', '.join(KINDS)} (K >= 1)")


def check_task_has_ptkb(choice: PtkbChoice | None, queries: list[ConversationalQuery], task: str) -> None:
    if choice is not None and not any(ptkb_of(q) for q in queries):
        raise UserInputError(f"--ptkb {choice.spec}: task '{task}' has no personal statements (TREC iKAT tasks do)")


def rank_statements(
    queries: list[ConversationalQuery], similarity: SimilarityFn, choice: PtkbChoice
) -> dict[str, tuple[str, ...]]:
    """Each query's statement ids, best first: ``similarity(question, statements)`` scores (ties by statement
    order). The question is the turn's current utterance."""
    ranking: dict[str, tuple[str, ...]] = {}
    for q in queries:
        ptkb = ptkb_of(q)
        if not ptkb:
            ranking[q.qid] = ()
            continue
        ids = list(ptkb)
        scores = similarity(q.query, [ptkb[sid] for sid in ids])
        if len(scores) != len(ids):
            raise MtrbenchError(f"--ptkb {choice.spec}: {len(scores)} scores for {len(ids)} statements of {q.qid}")
        order = sorted(range(len(ids)), key=lambda i: (-scores[i], i))
        ranking[q.qid] = tuple(ids[i] for i in order)
    return ranking
