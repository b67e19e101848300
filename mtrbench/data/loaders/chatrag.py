"""ChatRAG-Bench retrieval subsets (HF ``nvidia/ChatRAG-Bench``, SCHEMAS.md §2), one format ``chatrag``.

The card names the subset in ``loader_options.subset``: ``doc2dial``, ``quac``, ``qrecc`` (split
``test``), ``topiocqa``, ``inscit`` (split ``dev``). Layout, on the Hub and in a local copy
(``--data-dir`` = the repository root)::

    data/<subset>/<split>.json       JSON array, one item per evaluated user turn:
        {"messages": [{"role", "content"}, ...]  (ends with the current user question),
         "answers": [str] (or "answer"), "ground_truth_ctx": ..., "document"?, "topic"?, "ctxs": [...]}
    data/<subset>/documents.json     doc2dial/quac/qrecc only: {document name: [chunk text, ...]}

**Per-document subsets (doc2dial, quac, qrecc).** The corpus is every chunk of ``documents.json``;
doc ids are ``f"{document}::{index}"`` (``index`` 0-based within the document), so a chunk id
is its document name, ``::`` and its position; white space and ``%`` in the name are percent-encoded
(``Fennick%20Protocol::2``) because a TREC run splits its lines on white space (``chunk_id``). ``ground_truth_ctx.index`` locates the gold chunk
(an item without ``index`` is located by the exact text of ``ground_truth_ctx.ctx`` within its
document). Each query's ``candidate_doc_ids`` are all chunks of its own document: the ChatQA
protocol (and MTR-Suite) retrieves only within the dialogue's document. ``--corpus PATH`` may
point at another ``documents.json``. Option ``gold_answer: append|prepend`` (off by default)
reproduces the QReCC protocol quirk of joining the answer to the gold chunk with ``" || "``
(NVIDIA's evaluation appends, cumulatively, in item order; MTR-Suite prepends).

**TopiOCQA.** No corpus in ChatRAG: pass TopiOCQA's ``full_wiki_segments.tsv`` (header
``id\\ttext\\ttitle``, title ``"Article [SEP] Section"``) with ``--corpus`` (the file or its folder;
a BEIR-style ``corpus.jsonl`` also works). Gold passages are the corpus rows whose text equals
``ground_truth_ctx.ctx`` exactly; when the text occurs in several rows, all are marked relevant
(MTR-Suite keeps the last one) and the case is counted in the warnings. Doc ids follow option
``corpus_ids``: ``id`` (the TSV ``id``, default), ``wiki`` (``"wiki:<id>"`` as DPR and mteb's
TopiOCQA write them) or ``row`` (0-based row position, MTR-Suite's ``index``).

**INSCIT.** ``ground_truth_ctx`` is a list of ``{"ctx"}``; no INSCIT passage collection exists, so
loading needs ``require_corpus=False`` (queries and gold texts only, no qrels) unless the user
passes a corpus they built (same formats and text matching as TopiOCQA).

**Conversations.** ChatRAG publishes no conversation ids. Consecutive items form one conversation
when the later item's messages start with all of the earlier item's messages (and, for the
per-document subsets, the document is the same). ``conversation_id`` is the 0-based ordinal of the
reconstructed conversation within the file, ``turn_id`` the number of user messages up to the
question, ``qid = f"{conversation_id}_{turn_id}"``; ``meta.item_index`` keeps the item's position
in the file, which is how the official scripts identify it. ``gold_rewrite`` is None.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from mtrbench.data import hub
from mtrbench.data.cards import TaskCard
from mtrbench.data.hub import load_split
from mtrbench.data.loaders import LoadRequest, register
from mtrbench.data.loaders.common import corpus_from_dataset, parse_messages
from mtrbench.data.model import USER, ConversationalQuery, Corpus, Message, TaskData
from mtrbench.data.validate import check_corpus, check_queries
from mtrbench.infra.errors import DataError
from mtrbench.infra.numeric import ascii_digits

DOCUMENT_SUBSETS = ("doc2dial", "quac", "qrecc")
TEXT_SUBSETS = ("topiocqa", "inscit")
SUBSETS = DOCUMENT_SUBSETS + TEXT_SUBSETS
CORPUS_ID_MODES = ("id", "wiki", "row")
GOLD_ANSWER_MODES = (None, "append", "prepend")
TOPIOCQA_TSV = "full_wiki_segments.tsv"
_ITEM_COLUMNS = ("messages", "answers", "answer", "ground_truth_ctx", "document", "topic")


@register("chatrag")
def load(card: TaskCard, request: LoadRequest) -> TaskData:
    opts = card.loader_options
    subset = opts.get("subset")
    if subset not in SUBSETS:
        raise DataError(f"{card.card_path}: loader_options.subset must be one of {list(SUBSETS)}, got {subset!r}")
    gold_answer = opts.get("gold_answer")
    if gold_answer not in GOLD_ANSWER_MODES:
        raise DataError(
            f"{card.card_path}: loader_options.gold_answer must be append, prepend or null, got {gold_answer!r}"
        )
    corpus_ids = opts.get("corpus_ids", "id")
    if corpus_ids not in CORPUS_ID_MODES:
        raise DataError(
            f"{card.card_path}: loader_options.corpus_ids must be one of {list(CORPUS_ID_MODES)}, got {corpus_ids!r}"
        )

    split = request.split
    local = request.data_dir or card.local_path()
    revision = None if local else card.source.revision
    rows, items_origin = _read_items(card, local, subset, split, revision)
    warnings: Counter = Counter()
    items = _parse_items(rows, items_origin, subset, warnings)

    if subset in DOCUMENT_SUBSETS:
        documents, docs_origin = _read_documents(card, request, local, subset, revision)
        corpus, queries = _document_task(items, documents, docs_origin, gold_answer, warnings)
        check_corpus(corpus, docs_origin)
        check_queries(queries, corpus, items_origin, warnings)
    else:
        corpus = _text_corpus(card, request, subset, corpus_ids)
        queries = _text_task(items, corpus, warnings)
        if len(corpus):
            check_corpus(corpus, str(request.corpus_path))
            check_queries(queries, corpus, items_origin, warnings)
        else:
            warnings["queries without qrels: no corpus to locate gold passage texts in"] += len(queries)
    return TaskData(
        name=card.name, split=split, corpus=corpus, queries=queries, dataset_revision=revision, warnings=warnings
    )


# ----------------------------------------------------------------------------------------- reading


def _read_items(card: TaskCard, local: Path | None, subset: str, split: str, revision: str | None):
    """The split's items through ``load_split``: a local copy by file, the Hub by config name."""
    if local is not None:
        local = Path(local)
        candidates = [local / "data" / subset / f"{split}.json", local / f"{split}.json"]
        if local.is_file():
            candidates.insert(0, local)
        path = next((p for p in candidates if p.is_file()), None)
        if path is None:
            raise DataError(
                f"{card.name}: no {split} file for subset '{subset}' in {local} (expected "
                f"{candidates[0]}, as in a download of nvidia/ChatRAG-Bench)"
            )
        rows = load_split(path, builder="json", data_files=str(path), split="train", what=f"{card.name} {split} items")
        origin = str(path)
    else:
        rows = load_split(
            card.source.hub, config=subset, split=split, revision=revision, what=f"{card.name} {split} items"
        )
        origin = f"{card.source.hub}/data/{subset}/{split}.json"
    if "messages" not in rows.column_names:
        raise DataError(f"{origin}: items have no 'messages' field (columns: {rows.column_names})")
    # ``ctxs`` (the generator's passages) can be most of the file and is not needed for retrieval.
    return rows.select_columns([c for c in _ITEM_COLUMNS if c in rows.column_names]), origin


def _read_documents(
    card: TaskCard, request: LoadRequest, local: Path | None, subset: str, revision: str | None
) -> tuple[dict[str, list[str]], str]:
    """``documents.json``: a JSON object, which ``datasets`` cannot read as rows, so it is read whole."""
    if request.corpus_path is not None:
        path = Path(request.corpus_path)
        if path.is_dir():
            path = path / "documents.json"
    elif local is not None:
        local = Path(local)
        folder = local.parent if local.is_file() else local
        candidates = [folder / "data" / subset / "documents.json", folder / "documents.json"]
        path = next((p for p in candidates if p.is_file()), candidates[0])
    else:
        path = hub.fetch_file(
            card.source.hub, f"data/{subset}/documents.json", revision, what=f"{card.name} documents.json"
        )
    if not path.is_file():
        raise DataError(
            f"{card.name}: {path} not found; the per-document subsets need data/{subset}/documents.json "
            f"from nvidia/ChatRAG-Bench (or pass `--corpus PATH` to it)"
        )
    try:
        with path.open(encoding="utf-8") as handle:
            documents = json.load(handle)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: not a readable JSON file ({exc})") from None
    if not isinstance(documents, dict):
        raise DataError(f"{path}: expected an object {{document: [chunk, ...]}}, got {type(documents).__name__}")
    for name, chunks in documents.items():
        if not isinstance(chunks, list) or not all(isinstance(c, str) for c in chunks):
            raise DataError(f"{path}: document '{name}' must map to a list of chunk strings")
    return documents, str(path)


# ------------------------------------------------------------------------------------------- items


def _parse_items(rows, origin: str, subset: str, warnings: Counter) -> list[dict[str, Any]]:
    items = []
    for n, row in enumerate(rows):
        where = f"{origin} record {n}"
        raw = row.get("messages")
        if not isinstance(raw, list) or not raw:
            raise DataError(f"{where}: 'messages' must be a non-empty list of {{role, content}}")
        messages = parse_messages(raw, where)
        if not messages or messages[-1].role != USER:
            raise DataError(f"{where}: 'messages' must end with the current user question")
        answers = row.get("answers")
        if answers is None:
            answers = row.get("answer")
        if answers is None:
            warnings["items without answers"] += 1
            answers = []
        elif isinstance(answers, str):
            answers = [answers]
        elif not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            raise DataError(f"{where}: 'answers' must be a list of strings")
        item = {
            "n": n,
            "where": where,
            "subset": subset,
            "messages": messages,
            "answers": tuple(a for a in answers if a),
            "gold": _gold_entries(row.get("ground_truth_ctx"), where),
        }
        if subset in DOCUMENT_SUBSETS:
            document = row.get("document")
            if document is None or isinstance(document, (list, dict)):
                raise DataError(f"{where}: per-document subset item needs a 'document' name")
            item["document"] = str(document)
        elif row.get("topic") is not None:
            item["topic"] = str(row["topic"])
        items.append(item)
    return items


def _gold_entries(raw: Any, where: str) -> list[tuple[int | None, str | None]]:
    """``ground_truth_ctx`` as ``[(index, ctx)]``: a dict, a list of dicts (INSCIT) or of strings."""
    if raw is None:
        raise DataError(f"{where}: no 'ground_truth_ctx'")
    entries = raw if isinstance(raw, list) else [raw]
    out = []
    for j, entry in enumerate(entries):
        if isinstance(entry, str):
            out.append((None, entry))
            continue
        if not isinstance(entry, dict):
            raise DataError(
                f"{where}: ground_truth_ctx must be {{index?, ctx}} or a list of them, got {type(entry).__name__}"
            )
        index = entry.get("index")
        if index is not None:
            if isinstance(index, str) and ascii_digits(index.strip().lstrip("-")):
                index = int(index)
            if isinstance(index, bool) or not isinstance(index, int):
                raise DataError(f"{where}: ground_truth_ctx index must be an integer, got {index!r}")
        ctx = entry.get("ctx")
        if ctx is not None and not isinstance(ctx, str):
            raise DataError(f"{where}: ground_truth_ctx ctx must be a string")
        if index is None and ctx is None:
            raise DataError(
                f"{where}: ground_truth_ctx{'' if len(entries) == 1 else f'[{j}]'} has neither 'index' nor 'ctx'"
            )
        out.append((index, ctx))
    return out


def _conversations(items: list[dict[str, Any]], key: str | None) -> list[tuple[str, int]]:
    """(conversation_id, turn_id) per item: an item continues the previous one when its messages
    extend the previous item's messages (and ``key``, e.g. the document, is the same)."""
    out = []
    conv = -1
    previous: list[Message] | None = None
    previous_key = None
    for item in items:
        messages = item["messages"]
        continues = (
            previous is not None
            and len(messages) > len(previous)
            and messages[: len(previous)] == previous
            and (key is None or item[key] == previous_key)
        )
        if not continues:
            conv += 1
        out.append((str(conv), sum(1 for m in messages if m.role == USER)))
        previous, previous_key = messages, item.get(key) if key else None
    return out


def _query(
    item: dict[str, Any], conv_id: str, turn: int, qrels: dict[str, int], candidates: tuple[str, ...] | None
) -> ConversationalQuery:
    meta: dict[str, Any] = {"subset": item["subset"], "item_index": item["n"]}
    for field in ("document", "topic"):
        if field in item:
            meta[field] = item[field]
    return ConversationalQuery(
        qid=f"{conv_id}_{turn}",
        conversation_id=conv_id,
        turn_id=turn,
        history=tuple(item["messages"][:-1]),
        query=item["messages"][-1].content,
        gold_rewrite=None,
        answers=item["answers"],
        qrels=qrels,
        candidate_doc_ids=candidates,
        meta=meta,
    )


# ------------------------------------------------------------------------- per-document subsets


def chunk_id(document: str, index: int) -> str:
    """The id of a document's ``index``-th chunk, one TREC field: a name's white space (and ``%``, so
    that decoding is unambiguous) percent-encoded."""
    name = "".join(f"%{ord(c):02X}" if c.isspace() or c == "%" else c for c in document)
    return f"{name}::{index}"


def _document_task(
    items, documents: dict[str, list[str]], docs_origin: str, gold_answer: str | None, warnings: Counter
) -> tuple[Corpus, list[ConversationalQuery]]:
    chunk_ids = {name: tuple(chunk_id(name, i) for i in range(len(chunks))) for name, chunks in documents.items()}
    texts = {name: list(chunks) for name, chunks in documents.items()}
    queries = []
    for item, (conv_id, turn) in zip(items, _conversations(items, "document")):
        document = item["document"]
        if document not in documents:
            raise DataError(f"{item['where']}: document '{document}' is not in {docs_origin}")
        chunks = documents[document]
        qrels: dict[str, int] = {}
        if not item["gold"]:
            warnings["items with an empty ground_truth_ctx list (no qrels)"] += 1
        for index, ctx in item["gold"]:
            if index is None:
                index = chunks.index(ctx) if ctx in chunks else None
                if index is None:
                    warnings["gold ctx without index not found in its document (no qrels)"] += 1
                    continue
            elif index < 0:
                warnings["gold index negative: no gold chunk (no qrels)"] += 1
                continue
            elif index >= len(chunks):
                raise DataError(
                    f"{item['where']}: ground_truth_ctx index {index} is out of range for "
                    f"document '{document}' ({len(chunks)} chunks in {docs_origin})"
                )
            elif ctx is not None and ctx != chunks[index]:
                warnings["gold ctx text differs from the documents.json chunk (index used)"] += 1
            qrels[chunk_ids[document][index]] = 1
            if gold_answer:
                if not item["answers"]:
                    warnings["gold_answer: items without an answer to join"] += 1
                else:
                    answer = item["answers"][0]
                    current = texts[document][index]
                    texts[document][index] = (
                        f"{current} || {answer}" if gold_answer == "append" else f"{answer} || {current}"
                    )
        queries.append(_query(item, conv_id, turn, qrels, chunk_ids[document]))
    ids = [doc_id for name in documents for doc_id in chunk_ids[name]]
    corpus = Corpus(ids=ids, titles=[""] * len(ids), texts=[t for name in documents for t in texts[name]])
    return corpus, queries


# ------------------------------------------------------------------- text-matched subsets


def _text_corpus(card: TaskCard, request: LoadRequest, subset: str, corpus_ids: str) -> Corpus:
    if request.corpus_path is None:
        if not request.require_corpus:
            return Corpus(ids=[], titles=[], texts=[])
        if subset == "topiocqa":
            raise DataError(
                f"{card.name} needs TopiOCQA's Wikipedia passage file {TOPIOCQA_TSV} (25.7M passages, header "
                f"id/text/title), which ChatRAG-Bench does not ship: get it with download_data.py from "
                f"https://github.com/McGill-NLP/topiocqa and pass `--corpus PATH` (the file or its folder)"
            )
        raise DataError(
            f"{card.name}: no retrieval corpus exists for INSCIT: ChatRAG-Bench ships only data/inscit/dev.json "
            f"and no INSCIT passage collection is published ready to use, so this task loads only without a "
            f"corpus (require_corpus=False: queries and gold passage texts, no qrels); to evaluate anyway, build "
            f"a passage file whose texts match ground_truth_ctx exactly (TSV id/text/title or BEIR corpus.jsonl) "
            f"and pass `--corpus PATH`"
        )
    return read_passage_file(Path(request.corpus_path), corpus_ids, what=f"{card.name} corpus")


def read_passage_file(path: Path, corpus_ids: str = "id", what: str = "corpus") -> Corpus:
    """TopiOCQA-style TSV (``id text title``, header row) or BEIR ``corpus.jsonl`` (``_id title text``)."""
    import datasets

    if path.is_dir():
        found = [p for p in (path / TOPIOCQA_TSV, path / "corpus.jsonl") if p.is_file()]
        if not found:
            raise DataError(f"--corpus {path}: folder has neither {TOPIOCQA_TSV} nor corpus.jsonl")
        path = found[0]
    if path.suffix in (".jsonl", ".json"):
        rows = load_split(path, builder="json", data_files=str(path), split="train", what=what)
        id_column = "_id" if "_id" in rows.column_names else "id"
    else:
        string = datasets.Value("string")
        rows = load_split(
            path,
            builder="csv",
            data_files=str(path),
            split="train",
            what=what,
            delimiter="\t",
            keep_default_na=False,
            features=datasets.Features({"id": string, "text": string, "title": string}),
        )
        id_column = "id"
    prefix = "wiki:" if corpus_ids == "wiki" else ""
    return corpus_from_dataset(
        rows,
        str(path),
        id_column=None if corpus_ids == "row" else id_column,
        text_column="text",
        title_column="title" if "title" in rows.column_names else None,
        id_prefix=prefix,
    )


def _text_task(items, corpus: Corpus, warnings: Counter) -> list[ConversationalQuery]:
    wanted = {ctx for item in items for _, ctx in item["gold"] if ctx}
    positions: dict[str, list[int]] = {}
    if len(corpus) and wanted:
        for i, text in enumerate(corpus.texts):
            if text in wanted:
                positions.setdefault(text, []).append(i)
    queries = []
    for item, (conv_id, turn) in zip(items, _conversations(items, None)):
        qrels: dict[str, int] = {}
        if not item["gold"]:
            warnings["items with an empty ground_truth_ctx list (no qrels)"] += 1
        for _, ctx in item["gold"]:
            if not ctx:
                warnings["gold entries without ctx text (ignored)"] += 1
                continue
            if not len(corpus):
                continue
            found = positions.get(ctx, [])
            if not found:
                warnings["gold passage text not found in the corpus (no qrels)"] += 1
            elif len(found) > 1:
                warnings["gold passage text found in several passages (all marked relevant)"] += 1
            for i in found:
                qrels[corpus.ids[i]] = 1
        queries.append(_query(item, conv_id, turn, qrels, None))
        if not len(corpus):
            queries[-1].meta["gold_ctx"] = [ctx for _, ctx in item["gold"] if ctx]
    return queries
