"""BEIR format: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv`` (header skipped).

A query's ``text`` may be a plain string or a conversation: a list of ``{"role", "content"}``
messages (last = current user question) or a list of strings (mteb's convention: all user turns).
An optional ``conversations.jsonl`` sidecar (``{_id, conversation_id, turn_id, history, query,
gold_rewrite, answers}``, written by ``mtrbench export``) restores full conversational structure.
On the Hub, the same data follows mteb's layout: configs ``corpus``, ``queries`` and ``default``
(qrels), selectable through the card's ``loader_options``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from mtrbench.data.cards import TaskCard
from mtrbench.data.hub import load_split
from mtrbench.data.loaders import LoadRequest, register
from mtrbench.data.loaders.common import corpus_from_rows, load_qrels, parse_messages
from mtrbench.data.model import USER, ConversationalQuery, TaskData
from mtrbench.data.validate import check_corpus, check_queries
from mtrbench.formats.beir import BeirFolder, qrels_from_rows
from mtrbench.formats.qrels import BEIR
from mtrbench.infra.errors import DataError, MtrbenchError


@register("beir")
def load(card: TaskCard, request: LoadRequest) -> TaskData:
    split, data_dir = request.split, request.data_dir
    folder = data_dir or card.local_path()
    opts = card.loader_options
    if folder is not None:
        corpus_rows, query_rows, qrels, sidecar = _read_local(Path(folder), split, opts)
        origin = str(folder)
        revision = None
    else:
        hub, revision = card.source.hub, card.source.revision
        corpus_rows = load_split(
            hub,
            config=opts.get("corpus_config", "corpus"),
            split=opts.get("corpus_split", "corpus"),
            revision=revision,
            what=f"{card.name} corpus",
        )
        query_rows = load_split(
            hub,
            config=opts.get("queries_config", "queries"),
            split=opts.get("queries_split", "queries"),
            revision=revision,
            what=f"{card.name} queries",
        )
        qrel_rows = load_split(
            hub,
            config=opts.get("qrels_config", "default"),
            split=split,
            revision=revision,
            what=f"{card.name} qrels ({split})",
        )
        qrels = qrels_from_rows(qrel_rows, f"{hub} qrels ({split})")
        sidecar = None
        origin = hub
    corpus_origin, queries_origin = f"{origin} corpus", f"{origin} queries"
    if folder is not None:
        files = BeirFolder(Path(folder), prefix=opts.get("prefix") or "")
        corpus_origin, queries_origin = str(files.corpus), str(files.queries)
    corpus = corpus_from_rows(corpus_rows, corpus_origin)
    if not len(corpus):
        raise DataError(f"{corpus_origin}: the corpus has no document")
    check_corpus(corpus, corpus_origin)
    warnings: Counter = Counter()
    queries = queries_from_rows(query_rows, qrels, sidecar, queries_origin, warnings)
    if not queries:
        raise DataError(f"{queries_origin}: no query has qrels in split '{split}'")
    check_queries(queries, corpus, origin, warnings)
    return TaskData(
        name=card.name, split=split, corpus=corpus, queries=queries, dataset_revision=revision, warnings=warnings
    )


def _read_local(folder: Path, split: str, opts: dict[str, Any]):
    beir = BeirFolder(folder, prefix=opts.get("prefix") or "")
    beir.check(split)
    corpus = load_split(beir.corpus, builder="json", data_files=str(beir.corpus), split="train", what="corpus")
    queries = load_split(beir.queries, builder="json", data_files=str(beir.queries), split="train", what="queries")
    qrels = load_qrels(beir.qrels(split), BEIR, "qrels")
    sidecar = None
    if beir.conversations.is_file():
        sidecar = load_split(
            beir.conversations,
            builder="json",
            data_files=str(beir.conversations),
            split="train",
            what="conversations sidecar",
        )
    return corpus, queries, qrels, sidecar


def _sidecar_meta(conv: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """A query's metadata: the sidecar's ``meta`` (a struct, or a JSON string when the values do not fit one
    Arrow schema: the HF export) or the BEIR query record's ``metadata``."""
    meta = conv.get("meta")
    if meta is None:
        return dict(row.get("metadata") or {})
    if isinstance(meta, str):
        meta = json.loads(meta)
    return {k: v for k, v in meta.items() if v is not None}  # a struct column gives every row every key


def queries_from_rows(rows, qrels, sidecar, origin: str, warnings: Counter) -> list[ConversationalQuery]:
    """Queries of the split (those with qrels) from BEIR query rows; a sidecar row of the same ``_id``
    (``conversations.jsonl``, or the HF export's ``conversations`` config) supplies the conversation."""
    structured = {str(r["_id"]): r for r in sidecar} if sidecar is not None else {}
    queries = []
    seen: set[str] = set()
    for n, row in enumerate(rows):
        qid = row.get("_id")
        if qid is None or row.get("text") is None:
            raise DataError(f"{origin}: record {n} needs '_id' and 'text'")
        qid = str(qid)
        seen.add(qid)
        where = f"{origin} record {n} ({qid})"
        if qid not in qrels:  # BEIR keeps only queries that have qrels in the split; the others are counted
            try:
                messages = parse_messages(row["text"], where)
                malformed = not messages or messages[-1].role != USER or not messages[-1].content.strip()
            except MtrbenchError:
                malformed = True
            warnings[
                "malformed queries without qrels (skipped)"
                if malformed
                else "queries without qrels in this split (skipped)"
            ] += 1
            continue
        if qid in structured:
            conv = structured[qid]
            history = tuple(parse_messages(conv.get("history") or [], where))
            queries.append(
                ConversationalQuery(
                    qid=qid,
                    conversation_id=str(conv.get("conversation_id", qid)),
                    turn_id=int(conv.get("turn_id") or 1 + sum(m.role == USER for m in history)),
                    history=history,
                    query=str(conv["query"]),
                    gold_rewrite=conv.get("gold_rewrite") or None,
                    answers=tuple(conv.get("answers") or ()),
                    qrels=qrels[qid],
                    meta=_sidecar_meta(conv, row),
                    candidate_doc_ids=tuple(conv["candidate_doc_ids"])
                    if conv.get("candidate_doc_ids") is not None
                    else None,
                )
            )
            continue
        messages = parse_messages(row["text"], where)
        if not messages or messages[-1].role != USER:
            raise DataError(f"{where}: a conversational query must end with the user's question")
        history = tuple(messages[:-1])
        queries.append(
            ConversationalQuery(
                qid=qid,
                conversation_id=qid,
                turn_id=1 + sum(m.role == USER for m in history),
                history=history,
                query=messages[-1].content,
                qrels=qrels[qid],
                meta=dict(row.get("metadata") or {}),
            )
        )
    unknown = [qid for qid in qrels if qid not in seen]
    if unknown:
        warnings["qrels for unknown queries (dropped)"] += len(unknown)
    return queries
