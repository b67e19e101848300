"""CORAL (SCHEMAS.md §3; HF ``ariya2357/CORAL``, GitHub ``Ariya12138/CORAL``).

Files (paths relative to the dataset root, overridable in the card's ``loader_options``)::

    passage_corpus.json                    JSON Lines despite the name: {"ref_id": int, "ref_string": str}
    <split>/new_<split>_conversation.json  JSON array (JSON Lines also accepted) of
        {"conv_id": "Test_<a-d>_<n>", "turns": [{"turn_id", "question", "response", "golden_rewrite"?,
                                                  "golden_docs_pids": [int], "golden_docs_text": [str]}]}
    <split>/new_<split>_qrel.trec          "qid iter pid rel", qid = <conv_id>_<turn_id>, any whitespace

One query per turn, qid ``<conv_id>_<turn_id>``; history = the earlier (question, response) pairs;
``gold_rewrite`` = ``golden_rewrite``; ``answers`` = [``response``] with its ``[pid]`` citation marks
kept (citation labeling needs them). Responses in the *history* lose their ``[pid]`` marks when
``strip_history_citations`` is true: they are gold ids of earlier turns, not conversation text.
Qrels come from the ``.trec`` file (the official judgments); ``golden_docs_pids`` is the fallback
when the file is absent and is cross-checked otherwise (disagreements are counted in warnings).

A Hub copy is read file by file: each file is fetched with ``huggingface_hub`` and then read through
``mtrbench.data.hub.load_split`` like a local one.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from mtrbench.data import hub
from mtrbench.data.cards import TaskCard
from mtrbench.data.loaders import LoadRequest, register
from mtrbench.data.loaders.common import load_qrels
from mtrbench.data.model import ASSISTANT, USER, ConversationalQuery, Corpus, Message, TaskData
from mtrbench.data.validate import check_corpus, check_queries
from mtrbench.formats.qrels import TREC
from mtrbench.infra.errors import DataError

DEFAULT_CORPUS_FILE = "passage_corpus.json"
CITATION = re.compile(r"\s*\[\d+\]")
CONV_ID = re.compile(r"^(?:Train|Test)_([a-d])_\d+$")
# Conversation-flow sampling behind the type letter (CORAL README order; the letter mapping is inferred).
SAMPLING = {"a": "LDS", "b": "SIDS", "c": "STRW", "d": "DTRW"}
PIDS_DIFFER = "turns whose golden_docs_pids differ from the .trec qrels (.trec used)"
NO_TREC = "qrels taken from golden_docs_pids (no .trec file)"
UNKNOWN_QRELS = "qrels lines naming no conversation turn (ignored)"


@register("coral")
def load(card: TaskCard, request: LoadRequest) -> TaskData:
    opts = card.loader_options
    split = request.split
    conv_rel = opts.get("conversations", {}).get(split, f"{split}/new_{split}_conversation.json")
    qrels_rel = opts.get("qrels", {}).get(split, f"{split}/new_{split}_qrel.trec")
    corpus_rel = opts.get("corpus_file", DEFAULT_CORPUS_FILE)
    local = request.data_dir or card.local_path()
    revision = None if local is not None else card.source.revision

    def fetch(rel: str, required: bool = True) -> Path | None:
        if local is not None:
            path = Path(local) / rel
            if not path.is_file():
                if required:
                    raise DataError(f"{card.name}: missing {path} (a CORAL copy has {rel} under its root)")
                return None
            return path
        return _hub_file(card.source.hub, rel, revision, required, what=f"{card.name} {rel}")

    conv_path = fetch(conv_rel)
    conv_rows = hub.load_split(
        conv_path, builder="json", data_files=str(conv_path), split="train", what=f"{card.name} conversations ({split})"
    )
    trec_path = fetch(qrels_rel, required=False)
    trec = load_qrels(trec_path, TREC, f"{card.name} qrels") if trec_path is not None else None

    warnings: Counter = Counter()
    strip = bool(opts.get("strip_history_citations", True))
    queries = conversations_to_queries(conv_rows, str(conv_path), trec, strip, warnings)
    if trec is None:
        warnings[NO_TREC] += len(queries)
    else:
        known = {q.qid for q in queries}
        unknown = sum(len(docs) for qid, docs in trec.items() if qid not in known)
        if unknown:
            warnings[UNKNOWN_QRELS] += unknown

    if request.corpus_path is not None:
        corpus_path: Path | None = Path(request.corpus_path)
        if corpus_path.is_dir():
            corpus_path = corpus_path / DEFAULT_CORPUS_FILE
            if not corpus_path.is_file():
                raise DataError(f"--corpus {request.corpus_path}: no {DEFAULT_CORPUS_FILE} in this folder")
    elif request.require_corpus:
        corpus_path = fetch(corpus_rel)
    else:
        corpus_path = None
    if corpus_path is not None:
        rows = hub.load_split(
            corpus_path, builder="json", data_files=str(corpus_path), split="train", what=f"{card.name} corpus"
        )
        corpus = corpus_from_coral(rows, str(corpus_path))
        check_corpus(corpus, str(corpus_path))
        check_queries(queries, corpus, str(conv_path), warnings)
    else:
        corpus = Corpus(ids=[], titles=[], texts=[])
    return TaskData(
        name=card.name, split=split, corpus=corpus, queries=queries, dataset_revision=revision, warnings=warnings
    )


def _hub_file(repo: str | None, rel: str, revision: str | None, required: bool, what: str) -> Path | None:
    if not repo:
        raise DataError(f"{what}: the task card names no source.hub and no local path; pass --data-dir")
    return hub.fetch_file(repo, rel, revision, what, required=required)


def corpus_from_coral(rows, origin: str) -> Corpus:
    ids: list[str] = []
    texts: list[str] = []
    for n, row in enumerate(rows):
        ref_id, text = row.get("ref_id"), row.get("ref_string")
        if ref_id is None or isinstance(ref_id, bool) or not isinstance(ref_id, (int, str)) or str(ref_id) == "":
            raise DataError(f"{origin} record {n} ({ref_id}): needs an integer 'ref_id'")
        if not isinstance(text, str):
            raise DataError(f"{origin} record {n} ({ref_id}): needs a string 'ref_string'")
        ids.append(str(ref_id))
        texts.append(text)
    return Corpus(ids=ids, titles=[""] * len(ids), texts=texts)


def strip_citations(text: str) -> str:
    return CITATION.sub("", text)


def conversations_to_queries(
    rows, origin: str, trec: dict[str, dict[str, int]] | None, strip: bool, warnings: Counter
) -> list[ConversationalQuery]:
    queries: list[ConversationalQuery] = []
    for n, row in enumerate(rows):
        conv_id = row.get("conv_id")
        if not isinstance(conv_id, str) or not conv_id:
            raise DataError(f"{origin} record {n} ({conv_id}): needs a string 'conv_id'")
        turns = row.get("turns")
        if not isinstance(turns, list) or not turns:
            raise DataError(f"{origin} record {n} ({conv_id}): 'turns' must be a non-empty list")
        meta: dict[str, Any] = {}
        match = CONV_ID.match(conv_id)
        if match:
            meta = {"conversation_type": match.group(1), "sampling": SAMPLING[match.group(1)]}
        history: list[Message] = []
        for i, turn in enumerate(turns):
            turn_id = turn.get("turn_id") if isinstance(turn, dict) else None
            where = f"{origin} record {n} ({conv_id}_{turn_id})"
            if isinstance(turn_id, bool) or turn_id != i + 1:
                raise DataError(
                    f"{where}: turn {i + 1} of the conversation has turn_id {turn_id!r}; turn ids "
                    f"must count 1, 2, ... in order"
                )
            question, response = turn.get("question"), turn.get("response")
            if not isinstance(question, str) or not question.strip():
                raise DataError(f"{where}: needs a non-empty string 'question'")
            if response is not None and not isinstance(response, str):
                raise DataError(f"{where}: 'response' must be a string")
            pids = turn.get("golden_docs_pids")
            if pids is None:
                pids = []
            if not isinstance(pids, list) or any(isinstance(p, bool) or not isinstance(p, (int, str)) for p in pids):
                raise DataError(f"{where}: 'golden_docs_pids' must be a list of passage ids (ints), got {pids!r}")
            qid = f"{conv_id}_{turn_id}"
            golden = {str(p): 1 for p in pids}
            if trec is None:
                qrels = golden
            else:
                qrels = dict(trec.get(qid, {}))
                if set(golden) != {d for d, g in qrels.items() if g > 0}:
                    warnings[PIDS_DIFFER] += 1
            rewrite = turn.get("golden_rewrite")
            queries.append(
                ConversationalQuery(
                    qid=qid,
                    conversation_id=conv_id,
                    turn_id=turn_id,
                    history=tuple(history),
                    query=question,
                    gold_rewrite=rewrite.strip() if isinstance(rewrite, str) and rewrite.strip() else None,
                    answers=(response,) if response and response.strip() else (),
                    qrels=qrels,
                    meta=dict(meta),
                )
            )
            history.append(Message(USER, question))
            if response:
                history.append(Message(ASSISTANT, strip_citations(response) if strip else response))
    return queries
