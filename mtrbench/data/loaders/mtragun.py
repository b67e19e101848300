"""MTRAG-UN (GitHub ``IBM/mt-rag-benchmark``, folder ``mtragun-human``), retrieval tasks of one domain.

MTRAG-UN publishes no query files: its 507 generation tasks (``generation_tasks/reference.jsonl``, one
representative turn per conversation) carry the conversation up to that turn (``input``: ``speaker`` user/agent,
``text``), the reference passages (``contexts``), the reference answer (``targets``), the answerability and
question-type labels and the ``Collection`` (clapnq, govt, fiqa, ibmcloud). Each task is a query here:
qid = ``task_id`` (``<conversation_id><::><turn>``), history = every input message but the last, query = the last
(a user turn). ``retrieval_tasks/qrels/<domain>.tsv`` judges the answerable and partially answerable ones (332
of 507); the others are kept and excluded from metrics, as in MTRAG. Corpus: MTRAG's passage-level corpora
(``corpora/passage_level/<domain>.jsonl.zip`` in the clone, or ``--corpus``), as for the ``mtrag`` format.

Folder layout (``--data-dir``): the repository clone, or its ``mtragun-human`` folder. ``reference.jsonl`` may be
gzipped (``reference.jsonl.gz``). The Banking and Telco domains are not released yet.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

from mtrbench.data.cards import TaskCard
from mtrbench.data.loaders import LoadRequest, register
from mtrbench.data.loaders.common import load_qrels
from mtrbench.data.loaders.mtrag import (
    COLLECTIONS,
    SEPARATOR,
    _corpus_file,
    _match_offset_ids,
    _read_corpus,
    domain_and_clone,
)
from mtrbench.data.model import ASSISTANT, USER, ConversationalQuery, Corpus, Message, TaskData
from mtrbench.data.validate import check_corpus, check_queries, check_queries_without_corpus
from mtrbench.formats.qrels import BEIR
from mtrbench.infra.errors import DataError
from mtrbench.infra.numeric import ascii_digits

RELEASE = "mtragun-human"
COLLECTION_OF_DOMAIN = {"clapnq": "clapnq", "cloud": "ibmcloud", "fiqa": "fiqa", "govt": "govt"}  # reference.jsonl
ROLES = {"user": USER, "agent": ASSISTANT}
LABELS = (("answerability", "answerability"), ("Question Type", "question_type"), ("Multi-Turn", "multi_turn"))


@register("mtragun")
def load(card: TaskCard, request: LoadRequest) -> TaskData:
    domain, folder = domain_and_clone(card, request, "MTRAG-UN")
    release = folder / RELEASE if (folder / RELEASE).is_dir() else folder
    tasks_file = _reference_file(release, card.name)
    qrels_file = release / "retrieval_tasks" / "qrels" / f"{domain}.tsv"
    if not qrels_file.is_file():
        raise DataError(f"{card.name}: missing {qrels_file} (MTRAG-UN's retrieval_tasks/qrels/{domain}.tsv)")
    qrels = load_qrels(qrels_file, BEIR, f"{card.name} qrels")
    warnings: Counter = Counter()
    queries = [
        _query(row, n, tasks_file, domain, qrels, warnings)
        for n, row in _records(tasks_file)
        if _collection(row, n, tasks_file) == COLLECTION_OF_DOMAIN[domain]
    ]
    seen: set[str] = set()
    for q in queries:
        if q.qid in seen:
            raise DataError(f"{tasks_file}: task_id {q.qid} appears twice")
        seen.add(q.qid)
    stray = [qid for qid in qrels if qid not in seen]
    if stray:
        warnings[f"qrels for queries not among the {domain} generation tasks (ignored)"] += len(stray)

    corpus_file = _corpus_file(request.corpus_path, folder, domain)
    if corpus_file is None and request.require_corpus:
        raise DataError(
            f"{card.name} needs the MTRAG passage-level corpus {domain}.jsonl.zip "
            f"(IBM/mt-rag-benchmark corpora/passage_level/, a Git LFS file): pass `--corpus PATH`"
        )
    if corpus_file is not None:
        corpus = _read_corpus(corpus_file, card.name)
        check_corpus(corpus, str(corpus_file))
        _match_offset_ids(queries, corpus, warnings)
        check_queries(queries, corpus, str(tasks_file), warnings)
    else:
        corpus = Corpus(ids=[], titles=[], texts=[])
        check_queries_without_corpus(queries, str(tasks_file))
    return TaskData(name=card.name, split=request.split, corpus=corpus, queries=queries, warnings=warnings)


def _reference_file(release: Path, task: str) -> Path:
    for name in ("reference.jsonl", "reference.jsonl.gz"):
        path = release / "generation_tasks" / name
        if path.is_file():
            return path
    raise DataError(
        f"{task}: no generation_tasks/reference.jsonl under {release}; pass --data-dir with an "
        f"IBM/mt-rag-benchmark clone or its {RELEASE} folder"
    )


def _records(path: Path) -> list[tuple[int, Any]]:
    """(record index, parsed object) per non-blank line. Read directly, not through datasets' text builder:
    four cards read this one small file, and a cold builder cache costs seconds each time."""
    opener = gzip.open if path.suffix == ".gz" else open
    out = []
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            for n, line in enumerate(handle):
                if line.strip():
                    try:
                        out.append((n, json.loads(line)))
                    except json.JSONDecodeError as exc:
                        raise DataError(
                            f"{path} record {n}: not valid JSON ({exc.msg} at column {exc.colno})"
                        ) from None
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise DataError(f"{path}: cannot be read as UTF-8 JSON lines ({exc})") from None
    return out


def _collection(row: Any, n: int, path: Path) -> str:
    if not isinstance(row, dict) or not isinstance(row.get("Collection"), str):
        raise DataError(f"{path} record {n}: needs a string 'Collection'")
    return row["Collection"]


def _query(
    row: dict[str, Any], n: int, path: Path, domain: str, qrels: dict[str, dict[str, int]], warnings: Counter
) -> ConversationalQuery:
    task_id = row.get("task_id")
    where = f"{path} record {n}"
    if not isinstance(task_id, str) or SEPARATOR not in task_id:
        raise DataError(f"{where}: needs a 'task_id' '<conversation_id>{SEPARATOR}<turn>'")
    conversation, _, turn = task_id.rpartition(SEPARATOR)
    if not ascii_digits(turn) or int(turn) < 1:
        raise DataError(f"{where} ({task_id}): the turn after {SEPARATOR} must be a number >= 1")
    messages = _messages(row.get("input"), f"{where} ({task_id})")
    if messages[-1].role != USER:
        raise DataError(f"{where} ({task_id}): the last 'input' turn must be the user's question")
    targets = row.get("targets") or []
    if not isinstance(targets, list) or not all(isinstance(t, dict) for t in targets):
        raise DataError(f"{where} ({task_id}): 'targets' must be a list of objects")
    meta: dict[str, Any] = {"domain": domain, "collection": COLLECTIONS[domain]}
    for key, name in LABELS:
        value = row.get(key)
        if value is not None:
            meta[name] = value
    contexts = row.get("contexts") or []
    meta["reference_passages"] = [c.get("document_id") for c in contexts if isinstance(c, dict)]
    if task_id not in qrels:
        warnings["queries without qrels (kept, excluded from metrics)"] += 1
    return ConversationalQuery(
        qid=task_id,
        conversation_id=conversation,
        turn_id=int(turn),
        history=tuple(messages[:-1]),
        query=messages[-1].content,
        answers=tuple(str(t["text"]) for t in targets if t.get("text")),
        qrels=dict(qrels.get(task_id, {})),
        meta=meta,
    )


def _messages(turns: Any, where: str) -> list[Message]:
    if not isinstance(turns, list) or not turns:
        raise DataError(f"{where}: 'input' must be a non-empty list of turns")
    messages = []
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict) or turn.get("speaker") not in ROLES or not isinstance(turn.get("text"), str):
            raise DataError(f"{where}: input turn {i} needs 'speaker' (user or agent) and a string 'text'")
        messages.append(Message(ROLES[turn["speaker"]], turn["text"].strip()))
    return messages
