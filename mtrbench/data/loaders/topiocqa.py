"""TopiOCQA as mteb stores it (HF ``mteb/TopiOCQA``, SCHEMAS.md §5), format ``mteb-topiocqa``.

Three configs, each with split ``validation`` (a config with a single split is used whatever its
name, as mteb's loader does)::

    corpus    {"_id": "wiki:<n>", "title": "<article>; <section>", "text": str}    (25.7M passages)
    queries   {"_id": "<Conversation_no>-<Turn_no>", "text": [q1, a1, q2, a2, ..., current question]}
    default   qrels {"query-id", "corpus-id", "score"}

A query's ``text`` is the flattened conversation mteb keeps: alternating question / answer strings
without roles, ending with the current question. ``history`` = ``text[:-1]`` with even positions
``user`` and odd ``assistant``; ``query`` = ``text[-1]``; ``conversation_id`` and ``turn_id`` come from
splitting the id on its last ``-``; qid = the mteb id. No rewrites or answers are published here.
Queries without qrels in the split are dropped (as mteb does) and counted in the warnings. The
card's ``loader_options`` may rename configs (``corpus_config``, ``queries_config``,
``qrels_config``), e.g. for the hard-negative variant ``mteb/TopiOCQA_validation_top_250_only_w_correct-v2``.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from mtrbench.data.cards import TaskCard
from mtrbench.data.hub import load_split
from mtrbench.data.loaders import LoadRequest, register
from mtrbench.data.loaders.common import corpus_from_dataset
from mtrbench.data.model import ASSISTANT, USER, ConversationalQuery, Message, TaskData
from mtrbench.data.validate import check_corpus, check_queries
from mtrbench.formats.beir import qrels_from_rows
from mtrbench.infra.errors import DataError, UserInputError

_QID = re.compile(r"^(.+)-([0-9]+)$")


@register("mteb-topiocqa")
def load(card: TaskCard, request: LoadRequest) -> TaskData:
    opts = card.loader_options
    split = request.split
    local = request.data_dir or card.local_path()
    location = str(local) if local else card.source.hub
    revision = None if local else card.source.revision

    def read(config: str, what: str):
        table = load_split(location, config=config, split=None, revision=revision, what=f"{card.name} {what}")
        return _pick_split(table, split, f"{location} config '{config}'"), f"{location} config '{config}'"

    corpus_rows, corpus_origin = read(opts.get("corpus_config", "corpus"), "corpus")
    id_column = "_id" if "_id" in corpus_rows.column_names else "id"
    corpus = corpus_from_dataset(
        corpus_rows,
        corpus_origin,
        id_column=id_column,
        text_column="text",
        title_column="title" if "title" in corpus_rows.column_names else None,
    )
    check_corpus(corpus, corpus_origin)
    query_rows, query_origin = read(opts.get("queries_config", "queries"), "queries")
    qrel_rows, qrels_origin = read(opts.get("qrels_config", "default"), f"qrels ({split})")
    qrels = qrels_from_rows(qrel_rows, qrels_origin)

    warnings: Counter = Counter()
    queries = []
    for n, row in enumerate(query_rows):
        query = _to_query(row, f"{query_origin} record {n}", warnings)
        if query.qid not in qrels:
            warnings["queries without qrels in this split (dropped, as mteb does)"] += 1
            continue
        query.qrels = qrels[query.qid]
        queries.append(query)
    unknown = len(set(qrels) - {q.qid for q in queries})
    if unknown:
        warnings["qrels naming unknown queries (ignored)"] += unknown
    check_queries(queries, corpus, str(location), warnings)
    return TaskData(
        name=card.name, split=split, corpus=corpus, queries=queries, dataset_revision=revision, warnings=warnings
    )


def _pick_split(table, split: str, origin: str):
    """mteb's ``_get_split``: the requested split if present, else the only one."""
    if split in table:
        return table[split]
    if len(table) == 1:
        return next(iter(table.values()))
    raise UserInputError(f"{origin}: no split '{split}' (splits: {sorted(table)})")


def _to_query(row: dict[str, Any], where: str, warnings: Counter) -> ConversationalQuery:
    qid = row.get("_id", row.get("id"))
    if qid is None:
        raise DataError(f"{where}: query has no '_id'")
    qid = str(qid)
    where = f"{where} ({qid})"
    match = _QID.match(qid)
    if not match:
        raise DataError(f"{where}: query id must be '<conversation>-<turn>'")
    conv_id, turn = match.group(1), int(match.group(2))
    if turn < 1:
        raise DataError(f"{where}: turn number must be >= 1")
    text = row.get("text")
    if isinstance(text, str):
        text = [text]
    if not isinstance(text, list) or not text or not all(isinstance(t, str) for t in text):
        raise DataError(f"{where}: 'text' must be a non-empty list of strings (question, answer, ..., question)")
    if len(text) % 2 == 0:
        raise DataError(
            f"{where}: 'text' has {len(text)} strings; alternating question/answer strings "
            f"ending with the current question need an odd number"
        )
    if len(text) != 2 * turn - 1:
        warnings["conversation length differs from the turn in the query id (id kept)"] += 1
    history = tuple(Message(USER if i % 2 == 0 else ASSISTANT, t) for i, t in enumerate(text[:-1]))
    return ConversationalQuery(qid=qid, conversation_id=conv_id, turn_id=turn, history=history, query=text[-1])
