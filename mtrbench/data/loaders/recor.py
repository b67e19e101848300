"""RECOR (HF ``RECOR-Benchmark/RECOR``, GitHub ``RECOR-Benchmark/RECOR``): reasoning-focused multi-turn retrieval.

One card per domain, as the dataset publishes them: configs ``benchmark`` and ``corpus``, one split per domain
(``biology``, ``earth_science``, ..., ``Drones``, ``hardware``, ...), files ``data/benchmark/<domain>_benchmark.jsonl``
and ``data/corpus/<domain>_documents.jsonl``.

A benchmark record is one conversation: ``id``, ``task`` (the domain), ``original_query``/``original_answer`` (the
complex question it was decomposed from), ``turns`` and ``metadata``. Every turn is a query here:

* qid ``<id>_turn_<turn_id>``, the id RECOR's own retrieval scripts give it (runs stay comparable);
* ``query`` is the current question, the history the earlier turns' questions and answers (user, assistant);
* qrels: ``gold_doc_ids`` (older files: ``supporting_doc_ids``), each relevant at grade 1. A turn without any is
  kept and excluded from metrics (RECOR's scripts leave it out of their means too), and counted;
* ``subquestion_reasoning``, the turn's published retrieval reasoning, goes to ``meta[GOLD_REASONING]`` for the
  ``reasoning`` history strategies (serialize/history.py).

A document record is ``{"doc_id", "content"}``. Local copies (``--data-dir``): the Hub repository's layout (the
folder holding ``data/``), its ``data`` folder, or one folder holding both files; ``--corpus`` may name the
documents file or its folder. Without ``--data-dir`` both configs are read from the Hub (card ``source``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from mtrbench.data.cards import TaskCard
from mtrbench.data.hub import load_split
from mtrbench.data.loaders import LoadRequest, register
from mtrbench.data.loaders.common import corpus_from_dataset, corpus_from_rows, read_jsonl_records
from mtrbench.data.model import ASSISTANT, GOLD_REASONING, USER, ConversationalQuery, Corpus, Message, TaskData
from mtrbench.data.validate import check_corpus, check_queries, check_queries_without_corpus
from mtrbench.infra.errors import DataError
from mtrbench.infra.numeric import ascii_digits

DOMAINS = (
    "biology",
    "earth_science",
    "economics",
    "psychology",
    "robotics",
    "sustainable_living",
    "Drones",
    "hardware",
    "law",
    "medicalsciences",
    "politics",
)
NO_GOLD = "turns without gold documents (kept, excluded from metrics)"
NO_REASONING = "turns without subquestion_reasoning"


@register("recor")
def load(card: TaskCard, request: LoadRequest) -> TaskData:
    domain = str(card.loader_options.get("domain") or "")
    if domain not in DOMAINS:
        raise DataError(f"{card.card_path}: loader_options.domain must be one of {list(DOMAINS)}, got '{domain}'")
    warnings: Counter = Counter()
    folder = request.data_dir or card.local_path()
    revision = None
    if folder is not None:
        benchmark = _local_file(Path(folder), "benchmark", f"{domain}_benchmark.jsonl", card.name)
        origin = str(benchmark)
        rows: list[tuple[int, Any]] = read_jsonl_records(benchmark, f"{card.name} conversations")
    else:
        revision = card.source.revision
        origin = f"{_hub(card)} (benchmark, {domain})"
        data = load_split(
            _hub(card), config="benchmark", split=domain, revision=revision, what=f"{card.name} conversations"
        )
        rows = list(enumerate(data))
    queries = [q for n, row in rows for q in conversation_queries(row, n, origin, domain, warnings)]

    corpus = _corpus(card, request, Path(folder) if folder is not None else None, domain, revision)
    if corpus is None:
        corpus = Corpus(ids=[], titles=[], texts=[])
        check_queries_without_corpus(queries, origin)
    else:
        check_queries(queries, corpus, origin, warnings)
    return TaskData(
        name=card.name,
        split=request.split,
        corpus=corpus,
        queries=queries,
        dataset_revision=revision,
        warnings=warnings,
        extra_stats={"turns_with_retrieval_reasoning": sum(1 for q in queries if q.meta.get(GOLD_REASONING))},
    )


# ------------------------------------------------------------------------------------------ conversations


def conversation_queries(row: Any, n: int, origin: str, domain: str, warnings: Counter) -> list[ConversationalQuery]:
    """The queries of one benchmark record (``n``: its record number in ``origin``), one per turn, in turn order."""
    if not isinstance(row, dict):
        raise DataError(f"{origin} record {n}: expected a JSON object, got {type(row).__name__}")
    conv_id = row.get("id")
    if not isinstance(conv_id, str) or not conv_id.strip():
        raise DataError(f"{origin} record {n}: 'id' must be a non-empty string")
    where = f"{origin} record {n} ({conv_id})"
    turns = row.get("turns")
    if not isinstance(turns, list) or not turns:
        raise DataError(f"{where}: 'turns' must be a non-empty list")
    source = (row.get("metadata") or {}).get("source") if isinstance(row.get("metadata"), dict) else None
    history: list[Message] = []
    queries: list[ConversationalQuery] = []
    for j, turn in enumerate(turns):
        at = f"{where} turns[{j}]"
        turn_id, question, answer, gold, reasoning = _turn_fields(turn, at)
        if queries and turn_id <= queries[-1].turn_id:
            raise DataError(f"{at}: turn_id {turn_id} does not follow turn {queries[-1].turn_id}")
        if not gold:
            warnings[NO_GOLD] += 1
        meta: dict[str, Any] = {"domain": domain}
        if source:
            meta["source"] = str(source)
        if reasoning:
            meta[GOLD_REASONING] = reasoning
        else:
            warnings[NO_REASONING] += 1
        queries.append(
            ConversationalQuery(
                qid=f"{conv_id}_turn_{turn_id}",
                conversation_id=conv_id,
                turn_id=turn_id,
                history=tuple(history),
                query=question,
                answers=(answer,) if answer else (),
                qrels={doc_id: 1 for doc_id in gold},
                meta=meta,
            )
        )
        history.append(Message(USER, question))
        if answer:
            history.append(Message(ASSISTANT, answer))
    return queries


def _turn_fields(turn: Any, at: str) -> tuple[int, str, str, list[str], str]:
    """turn_id, question, answer, gold document ids and retrieval reasoning of one turn, each checked."""
    if not isinstance(turn, dict):
        raise DataError(f"{at}: expected a JSON object, got {type(turn).__name__}")
    raw_id = turn.get("turn_id")
    if isinstance(raw_id, bool) or not (isinstance(raw_id, int) or (isinstance(raw_id, str) and ascii_digits(raw_id))):
        raise DataError(f"{at}: 'turn_id' must be a whole number, got {raw_id!r}")
    question = turn.get("query")
    if not isinstance(question, str) or not question.strip():
        raise DataError(f"{at}: 'query' must be a non-empty string")
    answer = turn.get("answer")
    if answer is not None and not isinstance(answer, str):
        raise DataError(f"{at}: 'answer' must be a string")
    gold = turn.get("gold_doc_ids")
    if gold is None:
        gold = turn.get("supporting_doc_ids")
    if gold is None:
        gold = []
    if not isinstance(gold, list) or not all(
        (isinstance(d, str) and d.strip()) or (isinstance(d, int) and not isinstance(d, bool)) for d in gold
    ):
        raise DataError(f"{at}: 'gold_doc_ids' must be a list of document ids (strings or whole numbers)")
    reasoning = turn.get("subquestion_reasoning")
    if reasoning is not None and not isinstance(reasoning, str):
        raise DataError(f"{at}: 'subquestion_reasoning' must be a string")
    return int(raw_id), question.strip(), (answer or "").strip(), [str(d) for d in gold], (reasoning or "").strip()


# ------------------------------------------------------------------------------------------ files and corpus


def _local_file(folder: Path, config: str, name: str, task: str) -> Path:
    """``name`` in a local copy: ``data/<config>/``, ``<config>/`` or the folder itself."""
    if folder.is_file():
        folder = folder.parent
    candidates = [folder / "data" / config / name, folder / config / name, folder / name]
    found = next((path for path in candidates if path.is_file()), None)
    if found is None:
        raise DataError(
            f"{task}: no {name} in {folder} (looked in data/{config}/, {config}/ and the folder itself); "
            f"pass --data-dir with a copy of the Hub dataset RECOR-Benchmark/RECOR"
        )
    return found


def _hub(card: TaskCard) -> str:
    if not card.source.hub:
        raise DataError(f"{card.name}: no --data-dir and no source.hub in {card.card_path}")
    return card.source.hub


def _corpus(
    card: TaskCard, request: LoadRequest, folder: Path | None, domain: str, revision: str | None
) -> Corpus | None:
    name = f"{domain}_documents.jsonl"
    if request.corpus_path is not None:
        path = Path(request.corpus_path)
        return _read_documents(path if path.is_file() else _local_file(path, "corpus", name, card.name), card.name)
    if folder is not None:
        if not request.require_corpus and not any(
            (at / name).is_file() for at in (folder / "data" / "corpus", folder / "corpus", folder)
        ):
            return None  # topics only (stats, scoring): a local corpus is read when present, never required
        return _read_documents(_local_file(folder, "corpus", name, card.name), card.name)
    if not request.require_corpus:
        return None
    origin = f"{_hub(card)} (corpus, {domain})"
    rows = load_split(_hub(card), config="corpus", split=domain, revision=revision, what=f"{card.name} corpus")
    corpus = corpus_from_dataset(rows, origin, id_column="doc_id", text_column="content")
    check_corpus(corpus, origin)
    return corpus


def _read_documents(path: Path, task: str) -> Corpus:
    rows = load_split(path, builder="json", data_files=str(path), split="train", what=f"{task} corpus")
    if hasattr(rows, "column_names"):
        corpus = corpus_from_dataset(rows, str(path), id_column="doc_id", text_column="content")
    else:  # rows our own reader parsed (a field changing type between lines): checked one by one
        records = []
        for n, row in enumerate(rows):
            if not isinstance(row, dict) or not isinstance(row.get("content"), str):
                raise DataError(f"{path} record {n}: a document needs 'doc_id' and a 'content' string")
            records.append({"doc_id": row.get("doc_id"), "text": row["content"]})
        corpus = corpus_from_rows(records, str(path), id_field="doc_id")
    check_corpus(corpus, str(path))
    return corpus
