"""QReCC in its original release (GitHub ``apple/ml-qrecc``, SCHEMAS.md §4), format ``qrecc``.

Data (``--data-dir``: a clone of the repository, its ``dataset/`` folder, the zip itself, or a folder
with the extracted files)::

    dataset/qrecc_data.zip -> qrecc_train.json, qrecc_test.json    JSON arrays of turn records
        {"Conversation_no": int, "Turn_no": int (1-based), "Question": str, "Rewrite": str,
         "Answer": str ("" = none), "Answer_URL": str (space-separated URLs, may be ""),
         "Context": [Q1, A1, Q2, A2, ...] (the turns before, no roles), "Conversation_source": str}

``qid = f"{Conversation_no}_{Turn_no}"`` (the official evaluation's id), ``conversation_id =
str(Conversation_no)`` (unique within a split only), ``history`` = ``Context`` with even positions
``user`` and odd ``assistant``, ``gold_rewrite`` = ``Rewrite``, ``answers`` = ``[Answer]`` if non-empty,
``meta`` = ``conversation_source``, ``answer_urls``.

**Corpus (external).** The passage collection is not distributed: it is built (10M web pages, 54M
passages) by the scripts in ``collection/`` of the repository, as pyserini JSONL ``{"id", "contents"}``
with ``id = f"{page id}_p{i}"`` (page id: the URL, or for Wayback pages
``http://web.archive.org/web/<ts>id_/<URL>``). Pass that ``collection-paragraph/`` folder (every
``*.jsonl`` below it) or one ``.jsonl`` file with ``--corpus``.

**Qrels (derived).** QReCC publishes no gold passage ids: its ``utils/evaluate_retrieval.py`` counts a
passage as relevant when the turn has an answer and the passage's closest span to the answer
(``utils/span_heuristic.py``) has token F1 >= 0.8 with it. This loader applies that same test,
reimplemented exactly, to build static qrels (grade 1). Option ``qrels_scope``: ``answer_url`` (default)
tests only the passages of the pages named in ``Answer_URL`` (normalised: Wayback prefix, scheme,
``www.``, fragment and trailing slash removed), which is tractable on the 54M collection but misses
copies of the answer on other pages; ``all`` tests every passage (exact, for small collections).
Turns without an answer, or whose answer has no word left after SQuAD normalisation (the official
script would count every passage relevant for those), keep empty qrels and are excluded from metrics.
"""

from __future__ import annotations

import re
import string
import zipfile
from collections import Counter
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from mtrbench.data.cards import TaskCard
from mtrbench.data.hub import load_split
from mtrbench.data.loaders import LoadRequest, register
from mtrbench.data.loaders.common import corpus_from_dataset
from mtrbench.data.model import ASSISTANT, USER, ConversationalQuery, Corpus, Message, TaskData
from mtrbench.data.validate import check_corpus, check_queries
from mtrbench.infra.errors import DataError
from mtrbench.infra.numeric import ascii_digits

RELEVANCE_THRESHOLD = 0.8
QRELS_SCOPES = ("answer_url", "all")
_FIELDS = ("Conversation_no", "Turn_no", "Question", "Context")
_WAYBACK = re.compile(r"^https?://web\.archive\.org/web/[^/]*/")


@register("qrecc")
def load(card: TaskCard, request: LoadRequest) -> TaskData:
    scope = card.loader_options.get("qrels_scope", "answer_url")
    if scope not in QRELS_SCOPES:
        raise DataError(
            f"{card.card_path}: loader_options.qrels_scope must be one of {list(QRELS_SCOPES)}, got {scope!r}"
        )
    split = request.split
    rows, origin = _read_split(card, request.data_dir or card.local_path(), split)
    warnings: Counter = Counter()
    queries = [_turn_to_query(row, f"{origin} record {n}", warnings) for n, row in enumerate(rows)]

    if request.corpus_path is None:
        if request.require_corpus:
            raise DataError(
                f"{card.name} needs QReCC's passage collection, which is not distributed: build it (10M web pages, "
                f"54M passages from Common Crawl and the Wayback Machine) with the scripts in "
                f"https://github.com/apple/ml-qrecc/tree/main/collection and pass `--corpus PATH` (the "
                f"collection-paragraph folder or a .jsonl file of {{id, contents}} passages)"
            )
        warnings["queries without qrels: no corpus to judge passages against the answer"] += len(queries)
        return TaskData(
            name=card.name, split=split, corpus=Corpus(ids=[], titles=[], texts=[]), queries=queries, warnings=warnings
        )

    corpus_origin = str(request.corpus_path)
    corpus = read_collection(Path(request.corpus_path), what=f"{card.name} passage collection")
    check_corpus(corpus, corpus_origin)
    _judge(queries, corpus, scope, warnings)
    check_queries(queries, corpus, origin, warnings)
    return TaskData(name=card.name, split=split, corpus=corpus, queries=queries, warnings=warnings)


# ----------------------------------------------------------------------------------------- reading


def _read_split(card: TaskCard, location: Path | None, split: str):
    """The split's turn records through ``load_split`` (from inside the zip when zipped)."""
    if location is None or not Path(location).exists():
        raise DataError(
            f"{card.name}: QReCC is distributed on GitHub, not on the Hugging Face Hub: clone "
            f"https://github.com/apple/ml-qrecc (with git lfs) and pass `--data-dir` to it (or to "
            f"dataset/qrecc_data.zip){'' if location is None else f'; {location} does not exist'}"
        )
    location = Path(location)
    member = f"qrecc_{split}.json"
    if location.is_file() and location.suffix == ".json":
        return _load_json(location, str(location), split, card), str(location)
    zips = [location] if location.is_file() else [location / "dataset" / "qrecc_data.zip", location / "qrecc_data.zip"]
    plain = [] if location.is_file() else [location / "dataset" / member, location / member]
    for path in plain:
        if path.is_file():
            return _load_json(path, str(path), split, card), str(path)
    for path in zips:
        if path.is_file():
            inner = _zip_member(path, split)
            return _load_json(path, f"zip://{inner}::{path}", split, card), f"{path}:{inner}"
    raise DataError(
        f"{card.name}: no {member} or qrecc_data.zip in {location} (expected "
        f"dataset/qrecc_data.zip as in github.com/apple/ml-qrecc)"
    )


def _zip_member(path: Path, split: str) -> str:
    with path.open("rb") as handle:
        if handle.read(40).startswith(b"version https://git-lfs"):
            raise DataError(f"{path} is a Git LFS pointer, not the zip: run `git lfs pull` in the clone")
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except zipfile.BadZipFile:
        raise DataError(f"{path}: not a valid zip file") from None
    wanted = (f"qrecc_{split}.json", f"{split}.json")
    for name in names:
        if name.rsplit("/", 1)[-1] in wanted and "__MACOSX" not in name:
            return name
    raise DataError(f"{path}: no qrecc_{split}.json inside (members: {names})")


def _load_json(location: Path, data_files: str, split: str, card: TaskCard):
    rows = load_split(location, builder="json", data_files=data_files, split="train", what=f"{card.name} {split} turns")
    missing = [f for f in _FIELDS if f not in rows.column_names]
    if missing:
        raise DataError(f"{data_files}: turn records lack field(s) {missing} (columns: {rows.column_names})")
    return rows


def read_collection(path: Path, what: str = "corpus") -> Corpus:
    """pyserini JSONL ``{"id", "contents"}`` (a file, or every ``*.jsonl`` below a folder)."""
    if path.is_dir():
        files = sorted(str(p) for p in path.rglob("*.jsonl"))
        if not files:
            raise DataError(f"--corpus {path}: no .jsonl passage files below it")
    else:
        files = [str(path)]
    rows = load_split(path, builder="json", data_files=files, split="train", what=what)
    columns = rows.column_names
    id_column = "id" if "id" in columns else "_id"
    text_column = "contents" if "contents" in columns else "text"
    return corpus_from_dataset(
        rows,
        str(path),
        id_column=id_column,
        text_column=text_column,
        title_column="title" if "title" in columns else None,
    )


# ------------------------------------------------------------------------------------------- turns


def _turn_to_query(row: dict[str, Any], where: str, warnings: Counter) -> ConversationalQuery:
    conv, turn = row.get("Conversation_no"), row.get("Turn_no")
    conv = _as_int(conv)
    turn = _as_int(turn)
    if conv is None or turn is None or turn < 1:
        raise DataError(
            f"{where}: needs integer Conversation_no and Turn_no >= 1, got "
            f"{row.get('Conversation_no')!r}, {row.get('Turn_no')!r}"
        )
    qid = f"{conv}_{turn}"
    where = f"{where} ({qid})"
    question = row.get("Question")
    if not isinstance(question, str) or not question.strip():
        raise DataError(f"{where}: 'Question' must be a non-empty string")
    context = row.get("Context")
    if context is None:
        context = []
    if not isinstance(context, list) or not all(isinstance(c, str) for c in context):
        raise DataError(f"{where}: 'Context' must be a list of strings [Q1, A1, Q2, A2, ...]")
    if len(context) % 2:
        raise DataError(f"{where}: 'Context' has {len(context)} strings; question/answer pairs need an even number")
    if len(context) != 2 * (turn - 1):
        warnings["Context length differs from 2*(Turn_no-1) (Context kept as history)"] += 1
    history = tuple(Message(USER if i % 2 == 0 else ASSISTANT, text) for i, text in enumerate(context))
    answer = row.get("Answer") or ""
    rewrite = row.get("Rewrite") or None
    urls = [u for u in str(row.get("Answer_URL") or "").split() if u]
    meta = {"conversation_source": row.get("Conversation_source"), "answer_urls": urls}
    return ConversationalQuery(
        qid=qid,
        conversation_id=str(conv),
        turn_id=turn,
        history=history,
        query=question,
        gold_rewrite=rewrite,
        answers=(answer,) if answer.strip() else (),
        qrels={},
        meta=meta,
    )


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and ascii_digits(value.strip()):
        return int(value)
    return None


# ------------------------------------------------------------------------------------------- qrels


def normalize_url(url: str) -> str:
    url = _WAYBACK.sub("", url.strip()).split("#", 1)[0]
    url = re.sub(r"^[a-zA-Z]+://", "", url)
    url = url[4:] if url.lower().startswith("www.") else url
    host, _, rest = url.partition("/")
    return f"{host.lower()}/{rest}".rstrip("/")


def _page_of(passage_id: str) -> str:
    page, sep, number = passage_id.rpartition("_p")
    return page if sep and number.isdigit() else passage_id


def _judge(queries: list[ConversationalQuery], corpus: Corpus, scope: str, warnings: Counter) -> None:
    answered = []
    for q in queries:
        if not q.answers:
            warnings["turns without an answer (no qrels, as in the official evaluation)"] += 1
        elif not get_tokens(q.answers[0]):
            warnings["answers with no words after normalisation (no qrels)"] += 1
        else:
            answered.append(q)
    pages: dict[str, list[int]] = {}
    if scope == "answer_url":
        wanted = {normalize_url(u) for q in answered for u in q.meta["answer_urls"]}
        for i, doc_id in enumerate(corpus.ids):
            page = normalize_url(_page_of(doc_id))
            if page in wanted:
                pages.setdefault(page, []).append(i)
    everything = range(len(corpus))
    cache: dict[int, tuple[str, Counter]] = {}
    for q in answered:
        if scope == "answer_url":
            pool = sorted({i for u in q.meta["answer_urls"] for i in pages.get(normalize_url(u), [])})
            if not pool:
                warnings["answered turns whose Answer_URL pages are not in the corpus (no qrels)"] += 1
                continue
        else:
            pool = everything
        answer = q.answers[0]
        for i in pool:
            if is_relevant(corpus.texts[i], answer, cache, i):
                q.qrels[corpus.ids[i]] = 1
        if not q.qrels:
            warnings["answered turns with no passage reaching answer F1 >= 0.8 (no qrels)"] += 1


# The official relevance test (apple/ml-qrecc utils/evaluate_qa.py + utils/span_heuristic.py),
# reimplemented without nltk; the span search keeps the official order and strict ">" tie-breaking.

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = set(string.punctuation)


def normalize_answer(s: str) -> str:
    s = "".join(ch for ch in s.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", s).split())


def get_tokens(s: str) -> list[str]:
    return normalize_answer(s).split() if s else []


def f1_from_tokens(gold: list[str], pred: list[str]) -> float:
    if not gold or not pred:
        return float(gold == pred)
    same = sum((Counter(gold) & Counter(pred)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def _closest_sequence(context: str, target: str) -> str:
    if target in context:
        return target
    size = len(target.split())
    size += int(0.05 * size)
    words = context.split()
    best, best_value = "", 0.0
    matcher = SequenceMatcher()
    matcher.set_seq2(target)
    for start in range(len(words) - size + 1):
        candidate = " ".join(words[start : start + size])
        matcher.set_seq1(candidate)
        value = matcher.quick_ratio()
        if value > best_value:
            best, best_value = candidate, value
        if value == 1.0:
            break
    return best


def closest_span_f1(normalized_passage: str, answer: str) -> float:
    """``find_closest_span_match(passage, answer)[1]`` of the official code (passage already normalised)."""
    span_tokens = get_tokens(_closest_sequence(normalized_passage, normalize_answer(answer)))
    gold = get_tokens(answer)
    gold_counts = Counter(gold)
    best, best_i, best_j = 0.0, None, None
    for i in range(len(span_tokens)):
        counts: Counter = Counter()
        same = 0
        for j in range(i + 1, len(span_tokens) + 1):
            token = span_tokens[j - 1]
            if counts[token] < gold_counts.get(token, 0):
                same += 1
            counts[token] += 1
            if same == 0:
                continue  # F1 0 never beats the running best
            precision, recall = same / (j - i), same / len(gold)
            score = 2 * precision * recall / (precision + recall)
            if score > best:
                best, best_i, best_j = score, i, j
    return f1_from_tokens(gold, get_tokens(" ".join(span_tokens[best_i:best_j])))


def is_relevant(
    passage: str, answer: str, cache: dict[int, tuple[str, Counter]] | None = None, key: int | None = None
) -> bool:
    """Official relevance: closest-span F1 >= 0.8. A passage is only searched if it could pass: F1 >= 0.8
    needs the span to hold >= 2/3 of the answer's tokens, unless the answer occurs verbatim."""
    gold = get_tokens(answer)
    if not gold:
        return False
    cached = cache.get(key) if cache is not None else None
    if cached is None:
        normalized = normalize_answer(passage)
        cached = (normalized, Counter(normalized.split()))
        if cache is not None and key is not None:
            cache[key] = cached
    normalized, tokens = cached
    if " ".join(gold) not in normalized:
        overlap = sum((Counter(gold) & tokens).values())
        if 3 * overlap < 2 * len(gold):
            return False
    return closest_span_f1(normalized, answer) >= RELEVANCE_THRESHOLD
