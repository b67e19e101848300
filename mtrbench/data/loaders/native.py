"""The native mtrbench format: BEIR-style ``corpus.jsonl`` plus one conversation per line.

Folder (also how a Hub copy is laid out; README.md ``configs`` map them)::

    corpus.jsonl               {"_id", "title", "text"}
    conversations/<split>.jsonl
        {"conversation_id": str, "switch_turn": int (-1: none), ...other keys -> meta,
         "messages": [{"role": "user", "content": str, "rewrite": str?, "qrels": [{"doc_id", "score"}]?},
                      {"role": "assistant", "content": str}, ...]}

Every user message is one query, qid ``<conversation_id>_<turn>`` (turn = 1-based user turn);
its answer is the assistant message that follows it. No ``qrels`` (or an empty list) = no gold:
the query is kept and excluded from metrics, counted in the results.

A local folder is read file by file (no README ``configs`` needed); a Hub id through its configs.
Every conversation is checked, judged or not.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from mtrbench.data.cards import TaskCard
from mtrbench.data.hub import load_split
from mtrbench.data.loaders import LoadRequest, register
from mtrbench.data.loaders.common import corpus_from_rows
from mtrbench.data.model import ASSISTANT, USER, ConversationalQuery, Message, TaskData
from mtrbench.data.validate import check_corpus, check_queries
from mtrbench.formats.qrels import grade_of
from mtrbench.formats.run import id_problem
from mtrbench.infra.errors import DataError


@register("mtrbench")
def load(card: TaskCard, request: LoadRequest) -> TaskData:
    split, data_dir = request.split, request.data_dir
    location = data_dir or card.local_path() or card.source.hub
    revision = None if (data_dir or card.local_path()) else card.source.revision
    local = Path(location).expanduser()
    if local.is_dir():
        corpus_rows, conv_rows = _read_local(local, split)
    else:
        corpus_rows = load_split(
            location, config="corpus", split="corpus", revision=revision, what=f"{card.name} corpus"
        )
        conv_rows = load_split(
            location,
            config="conversations",
            split=split,
            revision=revision,
            what=f"{card.name} conversations ({split})",
        )
    origin = f"{location}/corpus.jsonl"
    corpus = corpus_from_rows(corpus_rows, origin)
    check_corpus(corpus, origin)
    origin = f"{location}/conversations/{split}.jsonl"
    queries: list[ConversationalQuery] = []
    for n, row in enumerate(conv_rows):
        queries.extend(conversation_to_queries(row, f"{origin} record {n}"))
    warnings: Counter = Counter()
    check_queries(queries, corpus, origin, warnings)
    return TaskData(
        name=card.name, split=split, corpus=corpus, queries=queries, dataset_revision=revision, warnings=warnings
    )


def _read_local(folder: Path, split: str) -> tuple[Any, Any]:
    """The corpus and one split's conversations of a local folder, named by the documented layout."""
    corpus_file = folder / "corpus.jsonl"
    conv_file = folder / "conversations" / f"{split}.jsonl"
    for path in (corpus_file, conv_file):
        if not path.is_file():
            splits = sorted(p.stem for p in (folder / "conversations").glob("*.jsonl"))
            extra = f" (conversation splits here: {splits})" if path == conv_file and splits else ""
            raise DataError(f"native folder {folder}: missing {path.relative_to(folder)}{extra}")
    corpus_rows = load_split(corpus_file, builder="json", data_files=str(corpus_file), split="train", what="corpus")
    conv_rows = load_split(
        conv_file, builder="json", data_files=str(conv_file), split="train", what=f"conversations ({split})"
    )
    return corpus_rows, conv_rows


def conversation_to_queries(row: dict[str, Any], origin: str) -> list[ConversationalQuery]:
    conv_id = row.get("conversation_id")
    messages = row.get("messages")
    if conv_id is None or not isinstance(messages, list):
        raise DataError(f"{origin}: needs 'conversation_id' and a 'messages' list")
    conv_id = str(conv_id)
    problem = id_problem(conv_id)
    if problem:
        raise DataError(f"{origin}: conversation_id '{conv_id}' {problem}")
    meta = {k: v for k, v in row.items() if k not in ("conversation_id", "messages") and v is not None}
    switch_turn = meta.get("switch_turn")
    history: list[Message] = []
    queries = []
    turn = 0
    for i, msg in enumerate(messages):
        if (
            not isinstance(msg, dict)
            or msg.get("role") not in (USER, ASSISTANT)
            or not isinstance(msg.get("content"), str)
        ):
            raise DataError(f"{origin} ({conv_id}): message {i} needs role user/assistant and string content")
        if msg["role"] == USER:
            turn += 1
            following = messages[i + 1] if i + 1 < len(messages) else None
            answer = (
                following.get("content") if isinstance(following, dict) and following.get("role") == ASSISTANT else None
            )  # a malformed answer is reported when the loop reaches it
            qrels = {}
            for j, judgment in enumerate(msg.get("qrels") or []):
                grade = grade_of(judgment.get("score")) if isinstance(judgment, dict) else None
                if grade is None or judgment.get("doc_id") is None:
                    raise DataError(
                        f"{origin} ({conv_id}): message {i} qrels[{j}] needs doc_id and integer score, got {judgment!r}"
                    )
                doc_id = str(judgment["doc_id"])
                problem = id_problem(doc_id)
                if problem:
                    raise DataError(f"{origin} ({conv_id}): message {i} qrels[{j}] doc_id '{doc_id}' {problem}")
                qrels[doc_id] = grade
            q_meta = dict(meta)
            if isinstance(switch_turn, int) and switch_turn > 0:
                q_meta["after_switch"] = turn > switch_turn
            queries.append(
                ConversationalQuery(
                    qid=f"{conv_id}_{turn}",
                    conversation_id=conv_id,
                    turn_id=turn,
                    history=tuple(history),
                    query=msg["content"],
                    gold_rewrite=msg.get("rewrite") or None,
                    answers=(answer,) if answer else (),
                    qrels=qrels,
                    meta=q_meta,
                )
            )
        history.append(Message(msg["role"], msg["content"]))
    if not queries:
        raise DataError(f"{origin} ({conv_id}): conversation has no user message")
    return queries
