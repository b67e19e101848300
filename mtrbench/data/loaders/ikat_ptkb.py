"""TREC iKAT 2023's PTKB statement ranking: for each turn, rank the conversation's personal statements by how much
they matter to it. Topics and judgments from github.com/irlabamsterdam/iKAT (MIT; bundled): ``2023_test_topics.json``
and ``2023/evaluation/ptkb_rel_nist`` (the NIST assessors' judgments, split ``nist``, the default) or
``ptkb_rel_org`` (the organisers', split ``org``), TREC qrels whose document column is the statement id.

Queries are the ikat-2023 turns (qid ``<topic>_<turn>``, history and meta as ``ikat``); the corpus is every
statement of every conversation, id ``<topic>:<statement id>`` (``9-1:4``), and each turn may only retrieve its own
conversation's statements (its candidate pool). The judgments' statement ids are rewritten to the same form.
"""

from __future__ import annotations

from collections import Counter

from mtrbench.data.cards import TaskCard
from mtrbench.data.loaders import LoadRequest, register
from mtrbench.data.loaders.ikat import EDITIONS, TOPICS_SOURCE, Edition, find_files, read_topics, turn_queries
from mtrbench.data.loaders.ikat import read_turn_qrels as read_judgments
from mtrbench.data.model import Corpus, TaskData
from mtrbench.data.validate import check_corpus, check_queries
from mtrbench.infra.errors import DataError

JUDGMENTS = {"nist": "ptkb_rel_nist", "org": "ptkb_rel_org"}


def statement_doc_id(topic: str, statement: str) -> str:
    return f"{topic}:{statement}"


@register("ikat-ptkb")
def load(card: TaskCard, request: LoadRequest) -> TaskData:
    if request.split not in JUDGMENTS:
        raise DataError(f"{card.card_path}: the PTKB ranking task's splits are {list(JUDGMENTS)}, not {request.split}")
    topics_edition = EDITIONS[(2023, "test")]
    edition = Edition(
        2023,
        topics_edition.topics_file,
        topics_edition.topics_where,
        JUDGMENTS[request.split],
        f"{TOPICS_SOURCE} (2023/evaluation/)",
    )
    files = find_files(card, request, edition, {"topics_file": True, "qrels_file": True})
    warnings: Counter = Counter()
    topics = read_topics(files["topics_file"], 2023, warnings)
    judgments = read_judgments(files["qrels_file"], topics, card.name, warnings)
    topic_of = {turn.qid: topic.number for topic in topics for turn in topic.turns}
    qrels = {
        qid: {statement_doc_id(topic_of[qid], sid): grade for sid, grade in docs.items()}
        for qid, docs in judgments.items()
    }
    ids, texts = [], []
    for topic in topics:
        for sid, statement in topic.ptkb.items():
            ids.append(statement_doc_id(topic.number, sid))
            texts.append(statement)
    corpus = Corpus(ids=ids, titles=[""] * len(ids), texts=texts)
    queries = list(turn_queries(topics, qrels, warnings))
    for q in queries:
        q.candidate_doc_ids = tuple(statement_doc_id(q.conversation_id, sid) for sid in q.meta["ptkb"])
    origin = str(files["topics_file"])
    check_corpus(corpus, origin)
    check_queries(queries, corpus, origin, warnings)
    grades = Counter(g for docs in qrels.values() for g in docs.values())
    stats = {
        "judged_turns": len(qrels),
        "judgments": sum(grades.values()),
        "judgments_per_grade": dict(sorted(grades.items())),
    }
    return TaskData(card.name, request.split, corpus, queries, warnings=warnings, extra_stats=stats)
