"""MTRAG (GitHub ``IBM/mt-rag-benchmark``), retrieval tasks of one domain (clapnq, cloud, fiqa, govt). SCHEMAS.md §7.

The benchmark publishes each domain's retrieval task as BEIR files with three query variants of the same
turns, ``{"_id": "<conversation_id><::><turn>", "text": ...}``:

* ``<domain>_lastturn.jsonl``: ``"|user|: <current question>"``            -> ``query``
* ``<domain>_rewrite.jsonl``: ``"|user|: <stand-alone rewrite>"``            -> ``gold_rewrite``
* ``<domain>_questions.jsonl``: every user turn so far, one ``"|user|: ..."`` per line (agent turns are not
  included; ``|agent|:`` lines, should a variant carry them, become assistant messages) -> ``history`` =
  all but the last line, which must equal the lastturn question.

``qrels/<split>.tsv`` (``query-id corpus-id score``) gives the gold passages; only answerable/partial turns
are published, so turn numbers have gaps (skipped turns still appear in later histories). qid = the
published ``_id``; ``turn_id`` = its turn number.

Folder layout (``--data-dir``): the repository clone (``mtrag-human/retrieval_tasks/<domain>/``, older
``human/retrieval_tasks/<domain>/``, ``corpora/passage_level/<domain>.jsonl.zip``), a ``retrieval_tasks``
folder, or the domain folder itself. The passage-level corpus (``_id``, ``title``, ``text``, ``url``) is read
from ``--corpus`` (the zip, the unzipped jsonl, or a folder holding ``<domain>.jsonl[.zip]``) or from the
clone. Qrels ids carry two trailing chunk offsets that older corpus files lack
(``822086267_7384-8758-0-1374`` vs ``822086267_7384-8758``): both forms are matched. When
``generation_tasks/reference.jsonl`` sits in the clone, its targets become ``answers`` and its
answerability / question type / multi-turn labels go to ``meta`` (the history stays the one above).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtrbench.data.cards import TaskCard
from mtrbench.data.hub import load_split
from mtrbench.data.loaders import LoadRequest, register
from mtrbench.data.loaders.common import corpus_from_rows, load_qrels
from mtrbench.data.loaders.common import read_jsonl_records as _read_jsonl
from mtrbench.data.model import ASSISTANT, USER, ConversationalQuery, Corpus, Message, TaskData
from mtrbench.data.validate import check_corpus, check_queries
from mtrbench.data.validate import check_queries_without_corpus as _check_without_corpus
from mtrbench.formats.qrels import BEIR
from mtrbench.infra.errors import DataError
from mtrbench.infra.numeric import ascii_digits

DOMAINS = ("clapnq", "cloud", "fiqa", "govt")
COLLECTIONS = {
    "clapnq": "mt-rag-clapnq-elser-512-100-20240503",
    "cloud": "mt-rag-ibmcloud-elser-512-100-20240502",
    "fiqa": "mt-rag-fiqa-beir-elser-512-100-20240501",
    "govt": "mt-rag-govt-elser-512-100-20240611",
}
# The documented qrels corpus-id form of each domain (SCHEMAS §7), e.g. clapnq 822086267_7384-8758-0-1374.
QREL_ID_PATTERNS = {
    "clapnq": re.compile(r"\d+_\d+-\d+-\d+-\d+"),
    "cloud": re.compile(r"ibmcld_\d+-\d+-\d+"),
    "fiqa": re.compile(r"\d+-\d+-\d+"),
    "govt": re.compile(r"[0-9a-f]{16}-\d+-\d+"),
}
SEPARATOR = "<::>"
TURN_MARKER = re.compile(r"(?:^|\n)\|(user|agent)\|:[ ]?")
TASK_DIRS = (".", "retrieval_tasks", "mtrag-human/retrieval_tasks", "human/retrieval_tasks")
CORPUS_DIRS = ("corpora/passage_level", "corpora", "passage_level", ".")


def domain_and_clone(card: TaskCard, request: LoadRequest, benchmark: str) -> tuple[str, Path]:
    """The card's MTRAG domain and the local clone of IBM/mt-rag-benchmark (published on GitHub, not the Hub)."""
    domain = str(card.loader_options.get("domain") or "")
    if domain not in DOMAINS:
        raise DataError(f"{card.card_path}: loader_options.domain must be one of {list(DOMAINS)}, got '{domain}'")
    folder = request.data_dir or card.local_path()
    if folder is None or not Path(folder).exists():
        raise DataError(
            f"{card.name}: {benchmark} is published on GitHub, not the Hub: clone "
            f"https://github.com/IBM/mt-rag-benchmark (`git lfs pull` for the corpora) and pass "
            f"`--data-dir CLONE`"
        )
    return domain, Path(folder)


@register("mtrag")
def load(card: TaskCard, request: LoadRequest) -> TaskData:
    domain, folder = domain_and_clone(card, request, "MTRAG")
    task_dir = _task_dir(folder, domain, card.name)
    warnings: Counter = Counter()
    sources = _read_sources(card.name, folder, task_dir, domain, request.split, warnings)
    queries = [_query(sources, qid, n, text, domain, warnings) for qid, n, text in sources.lastturn]
    known = {q.qid for q in queries}
    stray = [qid for qid in sources.qrels if qid not in known]
    if stray:
        warnings[f"qrels for queries not in {sources.files['lastturn'].name} (ignored)"] += len(stray)
    corpus = _checked_corpus(card, request, folder, domain, queries, str(sources.files["lastturn"]), warnings)
    return TaskData(name=card.name, split=request.split, corpus=corpus, queries=queries, warnings=warnings)


@dataclass
class _MtragSources:
    """The retrieval task files of one MTRAG domain, read."""

    files: dict[str, Path]  # lastturn, rewrite, questions: <domain>_<kind>.jsonl
    lastturn: list[tuple[str, int, str]]  # (qid, record number, text)
    rewrites: dict[str, tuple[int, str]]  # qid -> (record number, text)
    questions: dict[str, tuple[int, str]]  # qid -> (record number, flattened conversation)
    qrels: dict[str, dict[str, int]]
    reference: dict[str, tuple[tuple[str, ...], dict]] | None  # generation_tasks/reference.jsonl, when present


def _read_sources(task: str, folder: Path, task_dir: Path, domain: str, split: str, warnings: Counter) -> _MtragSources:
    files = {kind: task_dir / f"{domain}_{kind}.jsonl" for kind in ("lastturn", "rewrite", "questions")}
    qrels_file = task_dir / "qrels" / f"{split}.tsv"
    for path in (*files.values(), qrels_file):
        if not path.is_file():
            raise DataError(
                f"{task}: missing {path} (MTRAG retrieval_tasks/{domain}/ holds the three query "
                f"files and qrels/{split}.tsv)"
            )
    lastturn = _read_variant(files["lastturn"], task)
    rewrites = {qid: (n, text) for qid, n, text in _read_variant(files["rewrite"], task)}
    questions = {qid: (n, text) for qid, n, text in _read_variant(files["questions"], task)}
    qrels = load_qrels(qrels_file, BEIR, f"{task} qrels")
    odd = sum(1 for docs in qrels.values() for d in docs if not QREL_ID_PATTERNS[domain].fullmatch(d))
    if odd:
        warnings[f"qrels corpus-ids not of the documented {domain} form (kept)"] += odd
    reference = _read_reference(folder, task_dir, task)
    return _MtragSources(files, lastturn, rewrites, questions, qrels, reference)


def _query(sources: _MtragSources, qid: str, n: int, text: str, domain: str, warnings: Counter) -> ConversationalQuery:
    """The query of a lastturn record: its history from the questions file, checked against it."""
    files = sources.files
    where = f"{files['lastturn']} record {n} ({qid})"
    conv_id, turn = _split_qid(qid, where)
    current = _strip_user(text)
    if qid not in sources.rewrites:
        raise DataError(f"{where}: no record with this _id in {files['rewrite']}")
    if qid not in sources.questions:
        raise DataError(f"{where}: no record with this _id in {files['questions']}")
    qn, flattened = sources.questions[qid]
    messages = _parse_flattened(flattened, f"{files['questions']} record {qn} ({qid})")
    if messages[-1].role != USER or messages[-1].content.strip() != current.strip():
        raise DataError(
            f"{files['questions']} record {qn} ({qid}): its last user turn "
            f"{messages[-1].content[:60]!r} differs from {files['lastturn'].name}'s {current[:60]!r}"
        )
    history = tuple(messages[:-1])
    if sum(m.role == USER for m in history) != turn - 1:
        warnings["histories whose user-turn count differs from the turn number"] += 1
    meta: dict[str, Any] = {"domain": domain, "collection": COLLECTIONS[domain]}
    answers: tuple[str, ...] = ()
    if sources.reference is not None:
        task = sources.reference.get(qid)
        if task is None:
            warnings["queries without a generation_tasks/reference.jsonl task"] += 1
        else:
            answers, extra = task
            meta.update(extra)
    if qid not in sources.qrels:
        warnings["queries without qrels (kept, excluded from metrics)"] += 1
    return ConversationalQuery(
        qid=qid,
        conversation_id=conv_id,
        turn_id=turn,
        history=history,
        query=current.strip(),
        gold_rewrite=_strip_user(sources.rewrites[qid][1]).strip() or None,
        answers=answers,
        qrels=dict(sources.qrels.get(qid, {})),
        meta=meta,
    )


def _checked_corpus(
    card: TaskCard,
    request: LoadRequest,
    folder: Path,
    domain: str,
    queries: list[ConversationalQuery],
    origin: str,
    warnings: Counter,
) -> Corpus:
    """The domain's passage corpus, checked with the queries against it (an empty one when none is needed)."""
    corpus_file = _corpus_file(request.corpus_path, folder, domain)
    if corpus_file is None and request.require_corpus:
        raise DataError(
            f"{card.name} needs the MTRAG passage-level corpus {domain}.jsonl.zip "
            f"(IBM/mt-rag-benchmark corpora/passage_level/, a Git LFS file): pass `--corpus PATH`"
        )
    if corpus_file is None:
        _check_without_corpus(queries, origin)
        return Corpus(ids=[], titles=[], texts=[])
    corpus = _read_corpus(corpus_file, card.name)
    check_corpus(corpus, str(corpus_file))
    _match_offset_ids(queries, corpus, warnings)
    check_queries(queries, corpus, origin, warnings)
    return corpus


# ------------------------------------------------------------------------------------------ files


def _task_dir(folder: Path, domain: str, task: str) -> Path:
    for sub in TASK_DIRS:
        for candidate in (folder / sub / domain, folder / sub):
            if (candidate / f"{domain}_lastturn.jsonl").is_file():
                return candidate
    raise DataError(
        f"{task}: no {domain}_lastturn.jsonl under {folder} (looked in "
        f"{', '.join(str(Path(s) / domain) for s in TASK_DIRS)}); pass --data-dir with an "
        f"IBM/mt-rag-benchmark clone or its retrieval_tasks folder"
    )


def _corpus_file(corpus_path: Path | None, folder: Path, domain: str) -> Path | None:
    names = (f"{domain}.jsonl.zip", f"{domain}.jsonl")
    if corpus_path is not None:
        corpus_path = Path(corpus_path)
        if corpus_path.is_file():
            return corpus_path
        places = [corpus_path / sub for sub in CORPUS_DIRS]
    else:  # the clone, or the clone two levels above a retrieval_tasks folder
        places = [folder / sub for sub in CORPUS_DIRS]
        places += [root / sub for root in list(folder.parents)[:2] for sub in CORPUS_DIRS[:2]]
    for place in places:
        for name in names:
            if (place / name).is_file():
                return place / name
    if corpus_path is not None:
        raise DataError(
            f"--corpus {corpus_path}: no {names[0]} or {names[1]} in it (or in its "
            f"{', '.join(CORPUS_DIRS[:-1])} folders)"
        )
    return None


def _read_corpus(path: Path, task: str) -> Corpus:
    with path.open("rb") as handle:  # the corpora are Git LFS files: a clone without `git lfs pull` has pointers
        if handle.read(64).startswith(b"version https://git-lfs"):
            raise DataError(f"{path} is a Git LFS pointer, not the corpus: run `git lfs pull` in the clone")
    rows = load_split(path, builder="json", data_files=str(path), split="train", what=f"{task} corpus")
    id_field = next((f for f in ("_id", "id", "document_id", "doc_id") if f in rows.column_names), None)
    if id_field is None:
        raise DataError(f"{path}: passages need an '_id' field, found {rows.column_names}")
    return corpus_from_rows(rows, str(path), id_field=id_field)


def _read_variant(path: Path, task: str) -> list[tuple[str, int, str]]:
    out = []
    for n, row in _read_jsonl(path, f"{task} queries ({path.name})"):
        if not isinstance(row, dict) or row.get("_id") is None or not isinstance(row.get("text"), str):
            raise DataError(f"{path} record {n}: needs '_id' and a string 'text'")
        out.append((str(row["_id"]), n, row["text"]))
    seen: set[str] = set()
    for qid, n, _ in out:
        if qid in seen:
            raise DataError(f"{path} record {n} ({qid}): duplicate _id")
        seen.add(qid)
    return out


def _read_reference(folder: Path, task_dir: Path, task: str) -> dict[str, tuple[tuple[str, ...], dict]] | None:
    """``generation_tasks/reference.jsonl`` (if present): task_id ``conv::turn`` -> (answers, meta)."""
    candidates = [task_dir.parent.parent / "generation_tasks" / "reference.jsonl"]
    candidates += [folder / sub / "generation_tasks" / "reference.jsonl" for sub in ("mtrag-human", "human", ".")]
    path = next((p for p in candidates if p.is_file()), None)
    if path is None:
        return None
    out: dict[str, tuple[tuple[str, ...], dict]] = {}
    for n, row in _read_jsonl(path, f"{task} generation tasks"):
        if not isinstance(row, dict) or not isinstance(row.get("task_id"), str):
            raise DataError(f"{path} record {n}: needs a string 'task_id' ('<conversation_id>::<turn>')")
        targets = row.get("targets") or []
        if not isinstance(targets, list) or not all(isinstance(t, dict) for t in targets):
            raise DataError(f"{path} record {n} ({row['task_id']}): 'targets' must be a list of objects")
        answers = tuple(str(t.get("text")) for t in targets if t.get("text"))
        meta = {}
        for key, name in (
            ("answerability", "answerability"),
            ("Question Type", "question_type"),
            ("Multi-Turn", "multi_turn"),
        ):
            value = row.get(key)
            if value is not None and value == value:  # NaN in pandas-written files
                meta[name] = value
        qid = row["task_id"] if SEPARATOR in row["task_id"] else row["task_id"].replace("::", SEPARATOR)
        out[qid] = (answers, meta)
    return out


# ------------------------------------------------------------------------------------------ parsing


def _split_qid(qid: str, where: str) -> tuple[str, int]:
    conv, sep, turn = qid.rpartition(SEPARATOR)
    if not sep or not conv or not ascii_digits(turn) or int(turn) < 1:
        raise DataError(f"{where}: _id must be '<conversation_id>{SEPARATOR}<turn>' with a turn number >= 1")
    return conv, int(turn)


def _strip_user(text: str) -> str:
    return text[len("|user|:") :].lstrip(" ") if text.startswith("|user|:") else text


def _parse_flattened(text: str, where: str) -> list[Message]:
    """``"|user|: a\\n|user|: b"`` -> messages; each line starts a turn with ``|user|:`` or ``|agent|:``."""
    markers = list(TURN_MARKER.finditer(text))
    if not markers or markers[0].start() != 0:
        raise DataError(f"{where}: a flattened conversation must start with '|user|: '")
    messages = []
    for i, marker in enumerate(markers):
        end = markers[i + 1].start() if i + 1 < len(markers) else len(text)
        role = USER if marker.group(1) == "user" else ASSISTANT
        messages.append(Message(role, text[marker.end() : end].strip()))
    return messages


def _offset_free(doc_id: str) -> str:
    """``822086267_7384-8758-0-1374`` -> ``822086267_7384-8758`` (the last two ``-`` fields are chunk offsets)."""
    parts = doc_id.rsplit("-", 2)
    return parts[0] if len(parts) == 3 else doc_id


def _match_offset_ids(queries: list[ConversationalQuery], corpus: Corpus, warnings: Counter) -> None:
    """Map qrels ids to the corpus's id form when only the offset suffix differs (either direction)."""
    suffixed: dict[str, str | None] | None = None  # offset-free id -> the unique corpus id carrying offsets
    for q in queries:
        for doc_id in [d for d in q.qrels if d not in corpus]:
            target: str | None = _offset_free(doc_id)
            if target not in corpus:
                if suffixed is None:
                    suffixed = {}
                    for cid in corpus.ids:
                        short = _offset_free(cid)
                        if short != cid and short not in corpus:
                            suffixed[short] = None if short in suffixed else cid
                target = suffixed.get(doc_id)
            if target is not None and target not in q.qrels:
                q.qrels[target] = q.qrels.pop(doc_id)
                warnings["qrels ids matched to corpus ids differing by the offset suffix"] += 1
