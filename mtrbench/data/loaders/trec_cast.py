"""TREC CAsT 2019 and 2020 (topics from github.com/daltonj/treccastweb), evaluation topics.

Every turn of every evaluation topic is one query, qid ``<topic>_<turn>`` (the id the qrels use),
``turn_id`` = the turn's ``number``; ``query`` = ``raw_utterance``, ``gold_rewrite`` = the manual rewrite,
``meta['automatic_rewrite']`` = the organisers' automatic rewrite (2020). ``history`` = the topic's earlier
raw utterances; for 2020, each earlier turn is followed by its canonical response (an assistant message)
when it can be had: a response text in the topic file, else the text of the canonical passage
(``automatic_canonical_result_id`` by default, ``loader_options.canonical_responses: manual`` for the manual
run's, ``none`` to leave them out) looked up in the corpus. Qrels keep their 0-4 grades; turns without
judgments are kept with no qrels (excluded from metrics).

Files (found anywhere under ``--data-dir``; names overridable in ``loader_options``):

* 2019: ``evaluation_topics_v1.0.json``, ``evaluation_topics_annotated_resolved_v1.0.tsv``
  (``<qid>\\t<manual rewrite>``), ``2019qrels.txt``;
* 2020: ``2020_manual_evaluation_topics_v1.0.json`` (raw, manual and automatic rewrites, manual canonical
  ids), ``2020_automatic_evaluation_topics_v1.0.json`` (automatic canonical ids), ``2020qrels.txt``.

The corpus (MS MARCO passages + TREC CAR paragraphs, ids ``MARCO_<pid>`` / ``CAR_<id>``) is not
published with the topics: pass ``--corpus`` with a BEIR ``corpus.jsonl`` (``_id``, ``title``, ``text``), a
TSV ``id<TAB>text`` (or ``id<TAB>title<TAB>text``) file, or a folder holding ``corpus.jsonl`` or ``*.tsv``
files. Corpus ids without the ``MARCO_`` / ``CAR_`` prefix are matched to the prefixed qrels ids.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtrbench.data.cards import TaskCard
from mtrbench.data.hub import load_split
from mtrbench.data.loaders import LoadRequest, register
from mtrbench.data.loaders.common import corpus_from_rows, load_qrels, text_lines
from mtrbench.data.model import ASSISTANT, USER, ConversationalQuery, Corpus, Message, TaskData
from mtrbench.data.validate import check_corpus, check_queries
from mtrbench.data.validate import check_queries_without_corpus as _check_without_corpus
from mtrbench.formats.qrels import TREC
from mtrbench.infra.errors import DataError

FILES = {
    2019: {
        "topics_file": "evaluation_topics_v1.0.json",
        "rewrites_file": "evaluation_topics_annotated_resolved_v1.0.tsv",
        "qrels_file": "2019qrels.txt",
    },
    2020: {
        "topics_file": "2020_manual_evaluation_topics_v1.0.json",
        "automatic_topics_file": "2020_automatic_evaluation_topics_v1.0.json",
        "qrels_file": "2020qrels.txt",
    },
}
CANONICAL = ("automatic", "manual", "none")
RESPONSE_TEXT_FIELDS = ("canonical_response", "response", "passage")  # a response text, should a topic file carry one
COLLECTION_PREFIXES = ("MARCO_", "CAR_", "WAPO_")
SOURCE = "https://github.com/daltonj/treccastweb"


@register("trec-cast")
def load(card: TaskCard, request: LoadRequest) -> TaskData:
    year, canonical = _year_and_canonical(card)
    folder = _data_folder(card, request, year)
    names = {key: str(card.loader_options.get(key) or default) for key, default in FILES[year].items()}
    warnings: Counter = Counter()
    sources = _read_sources(folder, names, year, canonical, card.name, warnings)
    corpus = _read_corpus(request.corpus_path, card.name) if request.corpus_path is not None else None
    if corpus is None and request.require_corpus:
        raise DataError(
            f"{card.name} needs its external corpus (MS MARCO passages + TREC CAR paragraphs, ids "
            f"MARCO_<pid> / CAR_<id> as in {sources.qrels_file.name}; see treccast.ai): pass `--corpus PATH` "
            f"(a BEIR corpus.jsonl or a TSV 'id<TAB>text')"
        )
    resolve = _resolver(corpus, warnings) if corpus is not None else (lambda doc_id: doc_id)
    queries = _queries(sources, year, canonical, corpus, resolve, warnings)
    known = {q.qid for q in queries}
    stray = sum(1 for qid in sources.qrels if qid not in known)
    if stray:
        warnings[f"qrels for turns not in {sources.topics_file.name} (ignored)"] += stray

    origin = str(sources.topics_file)
    if corpus is not None:
        check_corpus(corpus, str(request.corpus_path))
        check_queries(queries, corpus, origin, warnings)
    else:
        corpus = Corpus(ids=[], titles=[], texts=[])
        _check_without_corpus(queries, origin)
    return TaskData(name=card.name, split=request.split, corpus=corpus, queries=queries, warnings=warnings)


def _year_and_canonical(card: TaskCard) -> tuple[int, str]:
    """The CAsT edition (loader_options.year) and where its canonical responses come from."""
    opts = card.loader_options
    year = int(opts.get("year") or 0)
    if year not in FILES:
        raise DataError(f"{card.card_path}: loader_options.year must be one of {sorted(FILES)}, got {year}")
    canonical = str(opts.get("canonical_responses", "automatic" if year == 2020 else "none"))
    if canonical not in CANONICAL:
        raise DataError(f"{card.card_path}: loader_options.canonical_responses must be one of {list(CANONICAL)}")
    return year, canonical


def _data_folder(card: TaskCard, request: LoadRequest, year: int) -> Path:
    folder = request.data_dir or card.local_path()
    if folder is None or not Path(folder).exists():
        raise DataError(
            f"{card.name}: the CAsT {year} topics and qrels are not bundled: download them from "
            f"{SOURCE} ({year}/) and trec.nist.gov, and pass `--data-dir DIR`"
        )
    return Path(folder)


@dataclass
class _CastSources:
    """The files of one CAsT edition, read."""

    topics_file: Path
    topics: list[Any]
    rewrites: dict[str, str]  # 2019: qid -> manual rewrite (a file of its own)
    automatic: dict[str, dict[str, Any]]  # 2020 with automatic canonical responses: qid -> that file's turn
    qrels_file: Path
    qrels: dict[str, dict[str, int]]


def _read_sources(
    folder: Path, names: dict[str, str], year: int, canonical: str, task: str, warnings: Counter
) -> _CastSources:
    topics_file = _find(folder, names["topics_file"], year, task)
    topics = _read_topics(topics_file, task)
    rewrites: dict[str, str] = {}
    if year == 2019:
        rewrites_file = _find(folder, names["rewrites_file"], year, task)
        rewrites = _read_rewrites(rewrites_file, task)
    automatic: dict[str, dict[str, Any]] = {}
    if year == 2020 and canonical == "automatic":
        auto_file = _find(folder, names["automatic_topics_file"], year, task)
        automatic = {qid: turn for qid, _, _, turn in _turns(_read_topics(auto_file, task), auto_file)}
    qrels_file = _find(folder, names["qrels_file"], year, task)
    qrels = load_qrels(
        qrels_file,
        TREC,
        f"{task} qrels",
        on_duplicate=lambda *_: warnings.update(["duplicate qrels lines (last kept)"]),
    )
    return _CastSources(topics_file, topics, rewrites, automatic, qrels_file, qrels)


def _queries(
    sources: _CastSources,
    year: int,
    canonical: str,
    corpus: Corpus | None,
    resolve: Callable[[str], str],
    warnings: Counter,
) -> list[ConversationalQuery]:
    """A query per turn; its history: the topic's earlier utterances (with the canonical responses in 2020)."""
    queries: list[ConversationalQuery] = []
    history: list[Message] = []
    current_topic = None
    previous: tuple[dict, dict] | None = None  # (turn, automatic-file turn) before this one, same topic
    for qid, topic, _, turn in _turns(sources.topics, sources.topics_file):
        if topic["number"] != current_topic:
            current_topic, history, previous = topic["number"], [], None
        elif previous is not None and year == 2020 and canonical != "none":
            response = _canonical_response(*previous, canonical, corpus, resolve)
            if response is None:
                warnings["canonical responses left out of histories (no corpus, or passage not in it)"] += 1
            else:
                history.append(Message(ASSISTANT, response))
        raw = turn["raw_utterance"].strip()
        gold = sources.rewrites.get(qid) if year == 2019 else turn.get("manual_rewritten_utterance")
        gold = gold.strip() if isinstance(gold, str) else None
        if not gold:
            warnings["turns without a manual rewrite"] += 1
        auto_turn = sources.automatic.get(qid, {})
        judged = {resolve(d): g for d, g in sources.qrels.get(qid, {}).items()}
        if qid not in sources.qrels:
            warnings["turns without qrels (kept, excluded from metrics)"] += 1
        queries.append(
            ConversationalQuery(
                qid=qid,
                conversation_id=str(topic["number"]),
                turn_id=int(turn["number"]),
                history=tuple(history),
                query=raw,
                gold_rewrite=gold or None,
                answers=(),
                qrels=judged,
                meta=_turn_meta(topic, turn, auto_turn, year),
            )
        )
        history.append(Message(USER, raw))
        previous = (turn, auto_turn)
    return queries


def _turn_meta(topic: dict[str, Any], turn: dict[str, Any], auto_turn: dict[str, Any], year: int) -> dict[str, Any]:
    """The topic's number, title and description, the turn's automatic rewrite and canonical result ids."""
    meta: dict[str, Any] = {"topic": str(topic["number"]), "year": year}
    for key, name in (("title", "title"), ("description", "description")):
        if topic.get(key):
            meta[name] = topic[key]
    if turn.get("automatic_rewritten_utterance"):
        meta["automatic_rewrite"] = turn["automatic_rewritten_utterance"]
    for key in ("manual_canonical_result_id", "automatic_canonical_result_id"):
        value = turn.get(key) or auto_turn.get(key)
        if value:
            meta[key] = str(value)
    return meta


# ------------------------------------------------------------------------------------------ topics


def _find(folder: Path, name: str, year: int, task: str) -> Path:
    if folder.is_file():
        folder = folder.parent
    matches = sorted(p for p in folder.rglob(name) if p.is_file())
    if len(matches) > 1:
        preferred = [p for p in matches if str(year) in p.relative_to(folder).parts[:-1]]
        matches = preferred if len(preferred) == 1 else matches
    if not matches:
        raise DataError(
            f"{task}: {name} not found under {folder}; it is published in {SOURCE} ({year}/), "
            f"pass its folder as `--data-dir`"
        )
    if len(matches) > 1:
        raise DataError(
            f"{task}: several {name} files under {folder}: {[str(m) for m in matches]}; "
            f"pass the one folder to use as --data-dir"
        )
    return matches[0]


def _read_topics(path: Path, task: str) -> list[Any]:
    data = load_split(
        path,
        builder="text",
        data_files=str(path),
        split="train",
        sample_by="document",
        what=f"{task} topics ({path.name})",
    )
    try:
        topics = json.loads("\n".join(data["text"]))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(topics, list):
        raise DataError(f"{path}: expected a JSON list of topics, got {type(topics).__name__}")
    return topics


def _turns(topics: list[Any], path: Path):
    """(qid, topic, record index, turn) for every turn; validates the fields the loader needs."""
    seen: set[str] = set()
    for n, topic in enumerate(topics):
        if not isinstance(topic, dict) or topic.get("number") is None or not isinstance(topic.get("turn"), list):
            raise DataError(f"{path} record {n}: a topic needs 'number' and a 'turn' list")
        for i, turn in enumerate(topic["turn"]):
            number = turn.get("number") if isinstance(turn, dict) else None
            if isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise DataError(f"{path} record {n} (topic {topic['number']}): turn {i} needs an integer 'number' >= 1")
            qid = f"{topic['number']}_{number}"
            if not isinstance(turn.get("raw_utterance"), str):
                raise DataError(f"{path} record {n} ({qid}): turn {i} needs a string 'raw_utterance'")
            if qid in seen:
                raise DataError(f"{path} record {n} ({qid}): duplicate turn number")
            seen.add(qid)
            yield qid, topic, n, turn


def _read_rewrites(path: Path, task: str) -> dict[str, str]:
    rewrites: dict[str, str] = {}
    for n, line in enumerate(text_lines(path, f"{task} manual rewrites")):
        if not line.strip():
            continue
        qid, sep, text = line.partition("\t")
        topic, _, turn = qid.strip().partition("_")
        if not sep or not topic.isdigit() or not turn.isdigit():
            if n == 0 and not qid.strip()[:1].isdigit():
                continue  # a header row
            raise DataError(f"{path} record {n}: expected '<topic>_<turn><TAB><rewrite>'")
        rewrites[qid.strip()] = text.strip()
    return rewrites


# ------------------------------------------------------------------------------------------ corpus


def _read_corpus(path: Path, task: str) -> Corpus:
    path = Path(path)
    if path.is_dir():
        if (path / "corpus.jsonl").is_file():
            path = path / "corpus.jsonl"
        else:
            tsvs = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith((".tsv", ".tsv.gz")))
            if not tsvs:
                raise DataError(f"--corpus {path}: no corpus.jsonl or *.tsv file in this folder")
            parts = [_read_corpus_file(p, task) for p in tsvs]
            return Corpus(
                ids=[i for c in parts for i in c.ids],
                titles=[t for c in parts for t in c.titles],
                texts=[t for c in parts for t in c.texts],
            )
    return _read_corpus_file(path, task)


def _read_corpus_file(path: Path, task: str) -> Corpus:
    name = path.name.lower()
    if name.endswith((".jsonl", ".jsonl.gz", ".json", ".json.gz")):
        rows = load_split(path, builder="json", data_files=str(path), split="train", what=f"{task} corpus")
        id_field = next((f for f in ("_id", "id", "docid", "doc_id") if f in rows.column_names), None)
        if id_field is None:
            raise DataError(f"{path}: corpus records need an '_id' field, found {rows.column_names}")
        return corpus_from_rows(rows, str(path), id_field=id_field)
    if not name.endswith((".tsv", ".tsv.gz")):
        raise DataError(f"--corpus {path}: expected a BEIR corpus.jsonl or a .tsv file 'id<TAB>text'")
    import datasets

    opener = gzip.open if name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:  # peek: column count and header row only
        first = handle.readline().rstrip("\n").split("\t")
    if len(first) not in (2, 3):
        raise DataError(
            f"{path} record 0: a TSV corpus needs 'id<TAB>text' or 'id<TAB>title<TAB>text', got {len(first)} fields"
        )
    columns = ["_id", "text"] if len(first) == 2 else ["_id", "title", "text"]
    header = first[0].strip().lower() in ("_id", "id", "docid", "doc_id", "pid", "passage_id")
    rows = load_split(
        path,
        builder="csv",
        data_files=str(path),
        split="train",
        what=f"{task} corpus",
        delimiter="\t",
        column_names=columns,
        skiprows=1 if header else 0,
        quoting=3,
        na_filter=False,
        features=datasets.Features({c: datasets.Value("string") for c in columns}),
    )
    return corpus_from_rows(rows, str(path))


def _resolver(corpus: Corpus, warnings: Counter):
    """Qrels/canonical ids -> corpus ids: as is, or without the collection prefix (``MARCO_123`` -> ``123``)."""

    def resolve(doc_id: str) -> str:
        if doc_id in corpus:
            return doc_id
        for prefix in COLLECTION_PREFIXES:
            if doc_id.startswith(prefix) and doc_id[len(prefix) :] in corpus:
                warnings["ids matched to corpus ids without their collection prefix"] += 1
                return doc_id[len(prefix) :]
        return doc_id

    return resolve


def _canonical_response(turn: dict, auto_turn: dict, canonical: str, corpus: Corpus | None, resolve) -> str | None:
    for field in RESPONSE_TEXT_FIELDS:
        value = turn.get(field) or auto_turn.get(field)
        if isinstance(value, str) and value.strip():
            return value
    doc_id = (
        (auto_turn or turn).get("automatic_canonical_result_id")
        if canonical == "automatic"
        else turn.get("manual_canonical_result_id")
    )
    if not doc_id or corpus is None:
        return None
    doc_id = resolve(str(doc_id))
    if doc_id not in corpus:
        return None
    return corpus.texts[corpus.position(doc_id)]
