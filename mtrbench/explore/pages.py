"""What the explorer's pages show, as JSON-ready data: one record for the conversations list, one per
conversation page. The pages embed it and a small script draws it with text nodes only (no HTML is built
from dataset or model text), so a passage holding ``<script>`` shows as text.

Per turn and system: the serialized query (kept and cut parts), the per-query measures exactly as the
per-query file holds them, the run's top-k (doc id, score, rank as the run file orders it) with each
passage's gold grade (None: unjudged, a hole), and for RAG results the answer, its cited passages and the
judge's verdict or rating.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mtrbench.data.model import ConversationalQuery, Corpus
from mtrbench.explore.options import ExploreOptions
from mtrbench.explore.queries import QueryText
from mtrbench.explore.systems import ExploreSystem
from mtrbench.leaderboard.metric_names import metric_name
from mtrbench.results.writer import safe_name

# Measures shown per turn after the system's main one, when the per-query file has them.
TURN_MEASURES = ("ndcg_at_10", "recall_at_10", "mrr_at_10", "recall_at_100", "hit_rate_at_10")
MOSTLY_UNJUDGED = 0.5  # a top-k "mostly unjudged": more than half of its passages have no judgment


@dataclass(frozen=True)
class Conversation:
    id: str
    file: str  # the page's file name, relative to the conversations folder
    queries: list[ConversationalQuery]  # its turns, in order


def conversations_of(queries: Sequence[ConversationalQuery], systems: Sequence[ExploreSystem]) -> list[Conversation]:
    """The conversations with at least one turn in some system's per-query file, in task order."""
    shown = {qid for s in systems for qid in s.rows}
    grouped: dict[str, list[ConversationalQuery]] = {}
    for q in queries:
        grouped.setdefault(q.conversation_id, []).append(q)
    kept = [(cid, turns) for cid, turns in grouped.items() if any(q.qid in shown for q in turns)]
    return [
        Conversation(cid, f"{n:04d}-{safe_name(cid)[:60]}.html", sorted(turns, key=lambda q: q.turn_id))
        for n, (cid, turns) in enumerate(kept, 1)
    ]


def turn_measures(systems: Sequence[ExploreSystem], main: str) -> list[str]:
    present = {k for s in systems for row in s.rows.values() for k in row.values}
    return [main] + [k for k in TURN_MEASURES if k in present and k != main]


def top_docs(system: ExploreSystem, qid: str, k: int) -> list[tuple[str, float]]:
    return system.ranked.get(qid, [])[:k]


def unjudged_share(system: ExploreSystem, query: ConversationalQuery, k: int) -> float | None:
    docs = top_docs(system, query.qid, k)
    if not docs:
        return None
    return sum(doc not in query.qrels for doc, _ in docs) / len(docs)


def needed_passages(systems: Sequence[ExploreSystem], options: ExploreOptions) -> set[str]:
    """Every document a page can show: each query's top-k in the runs and the passages its answers were given."""
    needed: set[str] = set()
    for system in systems:
        for ranked in system.ranked.values():
            needed.update(doc for doc, _ in ranked[: options.top_k])
        for answer in system.rag.answers.values() if system.rag else ():
            needed.update(answer.passages)
    return needed


def passage_record(corpus: Corpus, doc_id: str, options: ExploreOptions) -> list[str]:
    """[title, snippet] (empty texts for a document the corpus lacks)."""
    if doc_id not in corpus:
        return ["", ""]
    i = corpus.position(doc_id)
    text = corpus.texts[i]
    snippet = text if len(text) <= options.snippet_chars else text[: options.snippet_chars].rstrip() + "\u2026"
    return [corpus.titles[i], snippet]


def _answer(system: ExploreSystem, qid: str) -> dict[str, Any] | None:
    if system.rag is None or qid not in system.rag.answers:
        return None
    generation = system.rag.answers[qid]
    judged = system.rag.judged.get(qid, {})
    record: dict[str, Any] = {"text": generation.answer, "passages": list(generation.passages)}
    for key in ("verdict", "rating", "verdict_error", "rating_error"):
        if judged.get(key) is not None:
            record[key] = judged[key]
    nuggets = {k: v for k, v in judged.items() if "nugget" in k}
    if nuggets:
        record["nuggets"] = nuggets
    return record


def turn_record(
    q: ConversationalQuery,
    systems: Sequence[ExploreSystem],
    texts: Sequence[Mapping[str, QueryText]],
    measures: Sequence[str],
    options: ExploreOptions,
) -> dict[str, Any]:
    per_system = []
    shown_docs: set[str] = set()
    for system, system_texts in zip(systems, texts):
        row = system.rows.get(q.qid)
        top = top_docs(system, q.qid, options.top_k)
        shown_docs.update(doc for doc, _ in top)
        answer = _answer(system, q.qid)
        if answer:
            shown_docs.update(answer["passages"])
        per_system.append(
            {
                "query": system_texts[q.qid].as_json() if q.qid in system_texts else {},
                "scores": None if row is None else {k: row.values[k] for k in measures if k in row.values},
                "top": [[doc, score] for doc, score in top],
                "unjudged": unjudged_share(system, q, options.top_k),
                "answer": answer,
            }
        )
    return {
        "qid": q.qid,
        "turn": q.turn_id,
        "utterance": q.query,
        "rewrite": q.gold_rewrite,
        "after_switch": bool(q.meta.get("after_switch")),
        "grades": {doc: q.qrels[doc] for doc in sorted(shown_docs) if doc in q.qrels},
        "systems": per_system,
    }


def _switch_turn(conversation: Conversation) -> int | None:
    """The first turn of the next topic (after a hard topic switch), None when the conversation has none."""
    return next((q.turn_id for q in conversation.queries if q.meta.get("after_switch")), None)


def systems_record(systems: Sequence[ExploreSystem]) -> list[dict[str, Any]]:
    return [
        {
            "name": s.name,
            "model": s.result.model_name,
            "history": s.result.history,
            "truncate": s.result.result_settings.truncate,
            "main": s.result.main_score_key,
            "generator": s.rag.generator if s.rag else None,
        }
        for s in systems
    ]


def conversation_page(
    conversation: Conversation,
    systems: Sequence[ExploreSystem],
    texts: Sequence[Mapping[str, QueryText]],
    corpus: Corpus,
    options: ExploreOptions,
    neighbours: tuple[str | None, str | None],
) -> dict[str, Any]:
    main = systems[0].result.main_score_key
    measures = turn_measures(systems, main)
    turns = [turn_record(q, systems, texts, measures, options) for q in conversation.queries]
    pack_queries(turns)
    docs = sorted({doc for t in turns for s in t["systems"] for doc, _ in s["top"]} | _answer_docs(turns))
    return {
        "kind": "conversation",
        "task": systems[0].result.task_name,
        "conversation": conversation.id,
        "switch_turn": _switch_turn(conversation),
        "measure": main,
        "measures": measures,
        "labels": {k: metric_name(k, short=True) for k in measures},
        "top_k": options.top_k,
        "systems": systems_record(systems),
        "passages": {doc: passage_record(corpus, doc, options) for doc in docs},
        "turns": turns,
        "previous": neighbours[0],
        "next": neighbours[1],
    }


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def pack_queries(turns: list[dict[str, Any]]) -> None:
    """Each system's serialized query stored as a change of the previous turn's: a history-carrying query grows
    turn by turn, so a page would otherwise hold the conversation once per turn. ``{"base": n, "add": s}``: the
    whole serialized text is the first n characters of the previous turn's (of the same system) followed by s;
    ``"cut": [b, a]``: its first b and last a characters were cut by truncation."""
    previous: dict[int, str] = {}
    for turn in turns:
        for n, system in enumerate(turn["systems"]):
            query = system["query"]
            whole = query.get("cut_before", "") + query.get("kept", "") + query.get("cut_after", "")
            base = _common_prefix(previous.get(n, ""), whole)
            packed: dict[str, Any] = {"base": base, "add": whole[base:]}
            if query.get("cut_before") or query.get("cut_after"):
                packed["cut"] = [len(query.get("cut_before", "")), len(query.get("cut_after", ""))]
            if query.get("note"):
                packed["note"] = query["note"]
            system["query"] = packed
            previous[n] = whole


def _answer_docs(turns: list[dict[str, Any]]) -> set[str]:
    return {doc for t in turns for s in t["systems"] if s["answer"] for doc in s["answer"]["passages"]}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def list_record(
    conversations: Sequence[Conversation], systems: Sequence[ExploreSystem], options: ExploreOptions
) -> dict[str, Any]:
    """The conversations list: per conversation its turns' main score per system (as the per-query files hold
    them), their top-k's unjudged shares (4 decimals) and the utterances to search."""
    main = systems[0].result.main_score_key
    rows = []
    for conversation in conversations:
        turns = []
        for q in conversation.queries:
            scores = [s.rows[q.qid].values.get(main) if q.qid in s.rows else None for s in systems]
            unjudged = [unjudged_share(s, q, options.top_k) for s in systems]
            turns.append(
                {
                    "t": q.turn_id,
                    "after": bool(q.meta.get("after_switch")),
                    "s": scores,
                    "u": [_rounded(v) for v in unjudged],
                }
            )
        rows.append(
            {
                "id": conversation.id,
                "file": conversation.file,
                "switch": _switch_turn(conversation),
                "text": " \u2016 ".join(q.query for q in conversation.queries),
                "turns": turns,
            }
        )
    return {
        "kind": "list",
        "task": systems[0].result.task_name,
        "split": systems[0].result.split,
        "measure": main,
        "measure_label": metric_name(main, short=True),
        "top_k": options.top_k,
        "mostly_unjudged": MOSTLY_UNJUDGED,
        "systems": systems_record(systems),
        "conversations": rows,
    }
