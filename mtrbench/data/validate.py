"""Checks every loader's output goes through: hard errors name the record, skippable problems are
counted into ``TaskData.warnings`` (which lands in the result JSON)."""

from __future__ import annotations

from collections import Counter

from mtrbench.data.model import ConversationalQuery, Corpus
from mtrbench.formats.run import id_problem
from mtrbench.infra.errors import DataError

# The warning that counts judgments naming a document the corpus lacks (a partial corpus: pipeline/partial_corpus.py)
UNKNOWN_QRELS = "qrels naming unknown documents (dropped)"


def check_corpus(corpus: Corpus, origin: str) -> None:
    """Document ids: unique, and each one a TREC run can hold (record n is the n-th document)."""
    for n, doc_id in enumerate(corpus.ids):
        problem = id_problem(doc_id)
        if problem:
            raise DataError(f"{origin} record {n}: document id '{doc_id}' {problem}")
    if len(corpus._position) != len(corpus.ids):
        dupes = [doc_id for doc_id, n in Counter(corpus.ids).items() if n > 1]
        first = next(n for n, doc_id in enumerate(corpus.ids) if corpus.position(doc_id) != n)
        doc_id = corpus.ids[first]  # position() holds an id's last record
        raise DataError(
            f"{origin} record {corpus.position(doc_id)}: {len(dupes)} duplicate document id(s), "
            f"e.g. '{doc_id}' (also record {first})"
        )


def check_queries(queries: list[ConversationalQuery], corpus: Corpus, origin: str, warnings: Counter) -> None:
    check_queries_without_corpus(queries, origin)
    for q in queries:
        for doc_id in q.qrels:
            problem = id_problem(doc_id)
            if problem:
                raise DataError(f"{origin}: qrels of query '{q.qid}' name document '{doc_id}', whose id {problem}")
        unknown = [d for d in q.qrels if d not in corpus]
        if unknown:
            warnings[UNKNOWN_QRELS] += len(unknown)
            for doc_id in unknown:
                del q.qrels[doc_id]
        if q.candidate_doc_ids is not None:
            kept = tuple(d for d in q.candidate_doc_ids if d in corpus)
            if len(kept) != len(q.candidate_doc_ids):
                warnings["candidate ids naming unknown documents (dropped)"] += len(q.candidate_doc_ids) - len(kept)
                q.candidate_doc_ids = kept
        empty_history = sum(1 for m in q.history if not m.content.strip())
        if empty_history:
            warnings["empty history messages (kept)"] += empty_history


def check_queries_without_corpus(queries: list[ConversationalQuery], origin: str) -> None:
    """The checks of ``check_queries`` that need no corpus (ids, empty questions), for topic-only loads."""
    seen: set[str] = set()
    for q in queries:
        for name, value in (("query id", q.qid), ("conversation id", q.conversation_id)):
            problem = id_problem(value)
            if problem:
                raise DataError(f"{origin}: {name} '{value}' (query '{q.qid}') {problem}")
        if q.qid in seen:
            raise DataError(f"{origin}: duplicate query id '{q.qid}'")
        seen.add(q.qid)
        if not q.query.strip():
            raise DataError(
                f"{origin}: query '{q.qid}' (conversation {q.conversation_id}, turn {q.turn_id}) "
                f"has an empty current question"
            )
