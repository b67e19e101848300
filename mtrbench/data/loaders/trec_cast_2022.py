"""TREC CAsT 2022 (topics from github.com/daltonj/treccastweb ``2022/``, MIT licence; qrels from NIST).

CAsT 2022 gives each topic as a tree: every turn but the first names its ``parent``, and a path from the root
to a leaf is one conversation (50 such paths over 18 topics). Each user turn is one query, whatever the paths
through it: qid ``<topic>_<turn number>`` (``132_1-3``, the id of the qrels and of
``2022_evaluation_topics_turn_ids.json``), ``conversation_id`` = the topic, ``turn_id`` = the turn's depth
among the user turns of its path (1 for the root). ``query`` = ``utterance``, ``gold_rewrite`` =
``manual_rewritten_utterance``; ``history`` = the turns on the path from the root to it: each user utterance,
and each system turn's canonical ``response``. The passages a system turn cites go to the next user turn's
``meta["response_provenance"]``.

Files: ``2022_evaluation_topics_tree_v1.0.json`` (bundled; found under ``--data-dir`` first) and the NIST qrels
``2022-qrels.txt`` (``--data-dir``). The corpus (MS MARCO v2 passages, KILT, Washington Post v4, passage ids
like ``MARCO_00_1234-5``) is external: ``--corpus`` with JSONL or TSV passages (``mtrbench.data.loaders.passages``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mtrbench.data.cards import TaskCard
from mtrbench.data.loaders import LoadRequest, register
from mtrbench.data.loaders.ikat import Edition, find_files, read_turn_qrels_for
from mtrbench.data.loaders.passages import read_passages
from mtrbench.data.model import ASSISTANT, USER, ConversationalQuery, Corpus, Message, TaskData
from mtrbench.data.validate import check_corpus, check_queries, check_queries_without_corpus
from mtrbench.infra.errors import DataError

SOURCE = "https://github.com/daltonj/treccastweb (2022/)"
EDITION = Edition(
    2022,
    "2022_evaluation_topics_tree_v1.0.json",
    SOURCE,
    "2022-qrels.txt",
    "https://trec.nist.gov/data/cast2022.html",
)


@register("trec-cast-2022")
def load(card: TaskCard, request: LoadRequest) -> TaskData:
    files = find_files(card, request, EDITION, {"topics_file": True, "qrels_file": True})
    warnings: Counter = Counter()
    topics = _read_tree(files["topics_file"])
    queries = list(_queries(topics, files["topics_file"]))
    qrels = read_turn_qrels_for(files["qrels_file"], {q.qid for q in queries}, card.name, warnings)
    for q in queries:
        q.qrels = dict(qrels.get(q.qid, {}))
        if not q.qrels:
            warnings["turns without qrels (kept, excluded from metrics)"] += 1
    origin = str(files["topics_file"])
    if request.corpus_path is not None:
        corpus = read_passages(request.corpus_path)
        check_corpus(corpus, str(request.corpus_path))
        check_queries(queries, corpus, origin, warnings)
    elif request.require_corpus:
        raise DataError(
            f"{card.name} needs its passage collection (MS MARCO v2, KILT and Washington Post passages, ids as in "
            f'{files["qrels_file"].name}): pass `--corpus PATH` (JSONL {{"id", "contents"}} or TSV id<TAB>text)'
        )
    else:
        check_queries_without_corpus(queries, origin)
        corpus = Corpus(ids=[], titles=[], texts=[])
    grades = Counter(g for docs in qrels.values() for g in docs.values())
    stats = {
        "judged_turns": len(qrels),
        "judgments": sum(grades.values()),
        "judgments_per_grade": {int(g): grades[g] for g in sorted(grades)},
    }
    return TaskData(card.name, request.split, corpus, queries, warnings=warnings, extra_stats=stats)


def _read_tree(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of topics")
    for n, topic in enumerate(data):
        if not isinstance(topic, dict) or topic.get("number") is None or not isinstance(topic.get("turn"), list):
            raise DataError(f"{path} record {n}: a topic needs 'number' and a 'turn' list")
    return data


def _queries(topics: list[dict[str, Any]], path: Path) -> Iterator[ConversationalQuery]:
    for n, topic in enumerate(topics):
        number = str(topic["number"])
        turns: dict[str, dict[str, Any]] = {}
        for i, turn in enumerate(topic["turn"]):
            if not isinstance(turn, dict) or not isinstance(turn.get("number"), str):
                raise DataError(f"{path} record {n} (topic {number}) turn {i}: needs a string 'number'")
            turns[turn["number"]] = turn
        for turn in topic["turn"]:
            if turn.get("participant") != "User":
                continue
            where = f"{path} record {n} ({number}_{turn['number']})"
            if not isinstance(turn.get("utterance"), str):
                raise DataError(f"{where}: a user turn needs a string 'utterance'")
            path_turns = _path_to(turn, turns, where)
            history, provenance = _history(path_turns[:-1])
            rewrite = turn.get("manual_rewritten_utterance")
            yield ConversationalQuery(
                qid=f"{number}_{turn['number']}",
                conversation_id=number,
                turn_id=sum(1 for t in path_turns if t.get("participant") == "User"),
                history=tuple(history),
                query=turn["utterance"].strip(),
                gold_rewrite=rewrite.strip() if isinstance(rewrite, str) and rewrite.strip() else None,
                meta={"topic": number, "turn": turn["number"], "response_provenance": provenance},
            )


def _path_to(turn: dict[str, Any], turns: dict[str, dict[str, Any]], where: str) -> list[dict[str, Any]]:
    """The turns from the topic's root to ``turn``, following ``parent``."""
    chain = [turn]
    while chain[-1].get("parent"):
        parent = turns.get(str(chain[-1]["parent"]))
        if parent is None or len(chain) > len(turns):
            raise DataError(f"{where}: parent '{chain[-1]['parent']}' is no turn of the topic (or a cycle)")
        chain.append(parent)
    return chain[::-1]


def _history(turns: list[dict[str, Any]]) -> tuple[list[Message], list[str]]:
    history: list[Message] = []
    provenance: list[str] = []
    for turn in turns:
        if turn.get("participant") == "User" and isinstance(turn.get("utterance"), str):
            history.append(Message(USER, turn["utterance"].strip()))
        elif isinstance(turn.get("response"), str) and turn["response"].strip():
            history.append(Message(ASSISTANT, turn["response"].strip()))
            provenance = [str(p) for p in turn.get("provenance") or []]
        else:
            provenance = []
    return history, provenance
