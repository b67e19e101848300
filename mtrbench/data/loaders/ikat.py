"""TREC iKAT 2023, 2024 and 2025 (topics from github.com/irlabamsterdam/iKAT, MIT licence; qrels from NIST).

Every turn of every topic is one query, qid ``<topic number>_<turn_id>`` (the id the qrels and the official run
use: ``9-1_3`` in 2023, ``0_8`` in 2024), ``conversation_id`` = the topic number, ``turn_id`` = the turn's
``turn_id``. ``query`` = the utterance (2025: ``user_utterance``), ``gold_rewrite`` = ``resolved_utterance``,
``answers`` = the canonical ``response``; ``history`` = every earlier turn of the topic, utterance then canonical
response (the track gives systems the earlier canonical responses). The topic's personal text knowledge base
(PTKB) goes to ``meta["ptkb"]`` (statement id -> statement, in the file's order) and the turn's relevant
statements to ``meta["ptkb_provenance"]`` (ids). 2023/2024 number the statements in the file (``{"1": ...}``);
2025 lists them (``["...", ...]``): they are numbered 1, 2, ... in list order, and the turn's ``relevant_ptkbs``
(statement texts) are mapped to those numbers. The passages the canonical response cites go to
``meta["response_provenance"]`` (2025: ``citations``).

Files (found anywhere under ``--data-dir``, then in the bundled copy of the topics; names overridable in
``loader_options``): the topics file of the card's year (bundled), and the NIST passage qrels
(``2023-qrels.all-turns.txt``, ``2024-qrels.txt``; 2025: ``2025-qrels.txt``, optional until NIST publishes it).
Grades 0-4 are kept; turns without judgments are kept with no qrels (excluded from trec_eval's means; the
official iKAT protocol counts every turn in the qrels).

The corpus, ClueWeb22-B split into 116.8M passages (ids ``clueweb22-en0000-06-17856:4``), is licensed from CMU
and not published with the topics: pass ``--corpus`` with a passage file in the layout of
``mtrbench.data.loaders.passages`` (JSONL ``{"id", "contents"}`` or TSV ``id<TAB>text``), read as a stream.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.data.cards import TaskCard
from mtrbench.data.loaders import LoadRequest, register
from mtrbench.data.loaders.common import load_qrels, text_lines
from mtrbench.data.loaders.passages import read_passages
from mtrbench.data.model import ASSISTANT, USER, ConversationalQuery, Corpus, Message, TaskData
from mtrbench.data.validate import check_corpus, check_queries, check_queries_without_corpus
from mtrbench.formats.qrels import TREC, Qrels
from mtrbench.infra.errors import DataError

TOPICS_SOURCE = "https://github.com/irlabamsterdam/iKAT"


@dataclass(frozen=True)
class Edition:
    """The published files of one iKAT year and split, and where each is published."""

    year: int
    topics_file: str
    topics_where: str
    qrels_file: str
    qrels_where: str
    qrels_required: bool = True


EDITIONS = {
    (2023, "test"): Edition(
        2023,
        "2023_test_topics.json",
        f"{TOPICS_SOURCE} (2023/data/)",
        "2023-qrels.all-turns.txt",
        "https://trec.nist.gov/data/ikat2023.html",
    ),
    (2023, "train"): Edition(
        2023,
        "2023_train_topics.json",
        f"{TOPICS_SOURCE} (2023/data/)",
        "2023_train_qrels.txt",
        "no passage qrels are published for the training topics",
        qrels_required=False,
    ),
    (2024, "test"): Edition(
        2024,
        "2024_test_topics.json",
        f"{TOPICS_SOURCE} (2024/data/)",
        "2024-qrels.txt",
        "https://trec.nist.gov/data/ikat2024.html",
    ),
    (2025, "test"): Edition(
        2025,
        "2025_test_topics.json",
        f"{TOPICS_SOURCE} (2025/data/)",
        "2025-qrels.txt",
        "https://trec.nist.gov (iKAT 2025, once published)",
        qrels_required=False,
    ),
}


@dataclass
class Turn:
    """One turn of a topics file, in the fields common to every year."""

    qid: str
    topic: str
    turn_id: int
    utterance: str
    resolved: str | None
    response: str
    ptkb_provenance: list[str]
    response_provenance: list[str]
    record: int  # the topic's index in the file


@dataclass
class Topic:
    number: str
    title: str
    ptkb: dict[str, str]  # statement id -> statement
    turns: list[Turn] = field(default_factory=list)


@register("ikat")
def load(card: TaskCard, request: LoadRequest) -> TaskData:
    edition = edition_of(card, request.split)
    files = find_files(card, request, edition, {"topics_file": True, "qrels_file": edition.qrels_required})
    warnings: Counter = Counter()
    topics = read_topics(files["topics_file"], edition.year, warnings)
    qrels = read_turn_qrels(files.get("qrels_file"), topics, card.name, warnings)
    corpus = _corpus(card, request)
    queries = list(turn_queries(topics, qrels, warnings))
    origin = str(files["topics_file"])
    if corpus is not None:
        check_corpus(corpus, str(request.corpus_path))
        check_queries(queries, corpus, origin, warnings)
    else:
        check_queries_without_corpus(queries, origin)
        corpus = Corpus(ids=[], titles=[], texts=[])
    return TaskData(
        name=card.name,
        split=request.split,
        corpus=corpus,
        queries=queries,
        warnings=warnings,
        extra_stats=topic_stats(topics, qrels),
    )


def edition_of(card: TaskCard, split: str) -> Edition:
    year = int(card.loader_options.get("year") or 0)
    edition = EDITIONS.get((year, str(card.loader_options.get("topics", split))))
    if edition is None:
        raise DataError(
            f"{card.card_path}: loader_options.year/topics must be one of "
            f"{[f'{y}/{s}' for y, s in EDITIONS]}, got {year}/{split}"
        )
    return edition


def find_files(card: TaskCard, request: LoadRequest, edition: Edition, wanted: dict[str, bool]) -> dict[str, Path]:
    """The files ``wanted`` (key -> required) under ``--data-dir``, then the bundled folder; one error naming
    every required file that is missing and where it is published."""
    places = [p for p in (request.data_dir, card.local_path()) if p is not None and Path(p).exists()]
    found: dict[str, Path] = {}
    missing: list[str] = []
    for key, required in wanted.items():
        name = str(card.loader_options.get(key) or getattr(edition, key))
        where = getattr(edition, key.replace("_file", "_where"), TOPICS_SOURCE)
        path = _first_match(places, name)
        if path is not None:
            found[key] = path
        elif required:
            missing.append(f"{name} (published at {where})")
    if missing:
        looked = ", ".join(str(p) for p in places) or "no folder"
        raise DataError(
            f"{card.name}: missing {'; '.join(missing)}; looked in {looked}: pass `--data-dir DIR` holding "
            f"the file(s) under their published names"
        )
    return found


def _first_match(places: list[Path], name: str) -> Path | None:
    for place in places:
        folder = place.parent if place.is_file() else place
        matches = sorted(p for p in folder.rglob(name) if p.is_file())
        if len(matches) > 1:
            raise DataError(f"several {name} files under {folder}: {[str(m) for m in matches]}; pass one folder")
        if matches:
            return matches[0]
    return None


def _corpus(card: TaskCard, request: LoadRequest) -> Corpus | None:
    if request.corpus_path is None:
        if request.require_corpus:
            raise DataError(
                f"{card.name} needs its passage collection (ClueWeb22-B passages, ids like "
                f"clueweb22-en0000-06-17856:4, licensed from CMU): pass `--corpus PATH` (JSONL "
                f'{{"id", "contents"}} or TSV id<TAB>text, docs/ikat.md)'
            )
        return None
    return read_passages(request.corpus_path)


# ------------------------------------------------------------------------------------------ topics


def read_topics(path: Path, year: int, warnings: Counter) -> list[Topic]:
    """The topics of an iKAT topics file of ``year``; a file in another year's layout is one error."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason})") from None
    if not isinstance(data, list) or not all(isinstance(t, dict) for t in data):
        raise DataError(f"{path}: expected a JSON list of topic objects")
    topics = []
    for n, raw in enumerate(data):
        _check_layout(raw, path, n, year)
        topics.append(_topic(raw, path, n, year, warnings))
    seen: set[str] = set()
    for topic in topics:
        for turn in topic.turns:
            if turn.qid in seen:
                raise DataError(f"{path} record {turn.record}: duplicate turn id {turn.qid}")
            seen.add(turn.qid)
    return topics


def _check_layout(raw: dict[str, Any], path: Path, n: int, year: int) -> None:
    turns_key = "responses" if year == 2025 else "turns"
    if turns_key in raw:
        return
    if year != 2025 and "responses" in raw:
        raise DataError(
            f"{path} record {n}: a 2025 topics file ('responses', 'user_utterance'), read as {year} "
            f"(which has 'turns'): use the ikat-2025 task"
        )
    if year == 2025 and "turns" in raw:
        raise DataError(f"{path} record {n}: a 2023/2024 topics file ('turns'), read as 2025 (which has 'responses')")
    raise DataError(f"{path} record {n}: a topic needs 'number', 'ptkb' and a '{turns_key}' list")


def _topic(raw: dict[str, Any], path: Path, n: int, year: int, warnings: Counter) -> Topic:
    if raw.get("number") is None:
        raise DataError(f"{path} record {n}: a topic needs a 'number'")
    number = str(raw["number"])
    ptkb = _ptkb(raw.get("ptkb"), path, n, year)
    topic = Topic(number, str(raw.get("title") or ""), ptkb)
    by_text = {text: sid for sid, text in ptkb.items()}
    for i, item in enumerate(raw["responses" if year == 2025 else "turns"]):
        where = f"{path} record {n} (topic {number}) turn {i}"
        if not isinstance(item, dict):
            raise DataError(f"{where}: a turn must be an object")
        turn_id = item.get("turn_id")
        if isinstance(turn_id, bool) or not isinstance(turn_id, int) or turn_id < 1:
            raise DataError(f"{where}: needs an integer 'turn_id' >= 1")
        utterance = item.get("user_utterance" if year == 2025 else "utterance")
        if not isinstance(utterance, str):
            raise DataError(f"{where}: needs a string '{'user_utterance' if year == 2025 else 'utterance'}'")
        if year == 2025:
            texts = item.get("relevant_ptkbs") or []
            unknown = [t for t in texts if t not in by_text]
            if unknown:
                warnings["relevant_ptkbs not among the topic's statements (dropped)"] += len(unknown)
            provenance = [by_text[t] for t in texts if t in by_text]
            cited = item.get("citations") or []
        else:
            provenance = [str(p) for p in item.get("ptkb_provenance") or []]
            cited = item.get("response_provenance") or []
        resolved = item.get("resolved_utterance")
        topic.turns.append(
            Turn(
                qid=f"{number}_{turn_id}",
                topic=number,
                turn_id=turn_id,
                utterance=utterance.strip(),
                resolved=resolved.strip() if isinstance(resolved, str) and resolved.strip() else None,
                response=str(item.get("response") or ""),
                ptkb_provenance=provenance,
                response_provenance=[str(c) for c in cited],
                record=n,
            )
        )
    return topic


def _ptkb(raw: Any, path: Path, n: int, year: int) -> dict[str, str]:
    if year == 2025:
        if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
            raise DataError(f"{path} record {n}: the 2025 'ptkb' is a list of statements")
        return {str(i): s for i, s in enumerate(raw, start=1)}
    if not isinstance(raw, dict) or not all(isinstance(s, str) for s in raw.values()):
        raise DataError(f"{path} record {n}: 'ptkb' must map statement ids to statements (a 2025 list read as {year}?)")
    return {str(k): v for k, v in raw.items()}


def all_turns(topics: list[Topic]) -> Iterator[Turn]:
    for topic in topics:
        yield from topic.turns


# ------------------------------------------------------------------------------------------ qrels


def read_turn_qrels(path: Path | None, topics: list[Topic], task: str, warnings: Counter) -> Qrels:
    """The qrels of the topics' turns (none when ``path`` is None): :func:`read_turn_qrels_for`."""
    if path is None:
        return {}
    return read_turn_qrels_for(path, {turn.qid for turn in all_turns(topics)}, task, warnings)


def read_turn_qrels_for(path: Path, known: set[str], task: str, warnings: Counter) -> Qrels:
    """Qrels whose query ids are among ``known`` turn ids: a file none of whose turn ids is known (another
    year's qrels) is one error naming its first line; stray turns among matching ones are a warning."""
    qrels = load_qrels(
        path, TREC, f"{task} qrels", on_duplicate=lambda *_: warnings.update(["duplicate qrels lines (last kept)"])
    )
    stray = [qid for qid in qrels if qid not in known]
    if qrels and len(stray) == len(qrels):
        line = next(n for n, text in enumerate(text_lines(path, f"{task} qrels")) if text.strip())
        example = sorted(known)[0] if known else "?"
        raise DataError(
            f"{path} record {line}: turn id '{stray[0]}' is no turn of the topics, and neither is any other "
            f"in the file (turn ids look like '{example}'): qrels of another year?"
        )
    if stray:
        warnings["qrels for turns not in the topics (ignored)"] += len(stray)
    return {qid: docs for qid, docs in qrels.items() if qid in known}


def turn_queries(topics: list[Topic], qrels: Qrels, warnings: Counter) -> Iterator[ConversationalQuery]:
    for topic in topics:
        history: list[Message] = []
        for turn in topic.turns:
            if turn.qid not in qrels:
                warnings["turns without qrels (kept, excluded from metrics)"] += 1
            meta: dict[str, Any] = {
                "topic": topic.number,
                "title": topic.title,
                "ptkb": dict(topic.ptkb),
                "ptkb_provenance": list(turn.ptkb_provenance),
                "response_provenance": list(turn.response_provenance),
            }
            yield ConversationalQuery(
                qid=turn.qid,
                conversation_id=topic.number,
                turn_id=turn.turn_id,
                history=tuple(history),
                query=turn.utterance,
                gold_rewrite=turn.resolved,
                answers=(turn.response,) if turn.response.strip() else (),
                qrels=dict(qrels.get(turn.qid, {})),
                meta=meta,
            )
            history.append(Message(USER, turn.utterance))
            if turn.response.strip():
                history.append(Message(ASSISTANT, turn.response))


def topic_stats(topics: list[Topic], qrels: Qrels) -> dict[str, Any]:
    """What the topics and qrels alone say: conversations, turns, judged turns, judgments per grade, statements
    per conversation (``tasks show --stats``)."""
    grades = Counter(grade for docs in qrels.values() for grade in docs.values())
    statements = [len(t.ptkb) for t in topics]
    return {
        "judged_turns": len(qrels),
        "judgments": sum(grades.values()),
        "judgments_per_grade": {int(g): grades[g] for g in sorted(grades)},
        "statements_per_conversation": {
            "mean": round(sum(statements) / len(statements), 2) if statements else 0.0,
            "min": min(statements, default=0),
            "max": max(statements, default=0),
            "total": sum(statements),
        },
    }
