"""MTR-Bench (MTR-Suite, SCHEMAS.md §1): per-turn rows over the MTR-DOCUMENT corpus.

Two releases share this loader (card ``format: mtr``):

* ``OkayestProgrammer/mtr-qwen35-fp8-12turn`` (splits train/test): one row per (conversation, turn),
  conversation-major, with ``turn`` (1-based, restarts at 1 for each conversation) and
  ``switch_turn`` (last turn of topic A; -1 = no switch).
* ``OkayestProgrammer/MTR-BENCH`` (legacy, paper): no ``turn``/``switch_turn`` columns; every
  ``turns_per_conversation`` (8) consecutive rows are one conversation, topic switch after turn 4
  (card ``loader_options.switch_turn``).

Each row holds ``messages`` = the conversation up to and including this turn's answer (exactly
``2*turn`` messages): query = ``messages[-2]``, history = ``messages[:-2]``, answer = ``messages[-1]``;
gold = ``ground_truth_document_idx``, a 0-based row position in MTR-DOCUMENT, so corpus doc id =
``str(row position)``. No conversation id column exists: ``conversation_id`` = ``<split>-<ordinal>``
and every row must extend the previous row of its conversation (checked).

Corpus location (card ``loader_options``): ``request.corpus_path`` (a folder laid out like the Hub
copy, or a .parquet/.jsonl/.json/.csv file) if given; else, for a local copy of the queries, the
sibling folder ``corpus_dir`` (``MTR-DOCUMENT``) next to it; else the Hub dataset ``corpus_hub`` at
``corpus_revision``. ``corpus_titles: false`` keeps only ``text``, as the authors embed it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.data.cards import TaskCard
from mtrbench.data.hub import load_split
from mtrbench.data.loaders import LoadRequest, register
from mtrbench.data.model import ASSISTANT, USER, ConversationalQuery, Corpus, Message, TaskData
from mtrbench.data.validate import check_corpus, check_queries
from mtrbench.infra.errors import DataError, UserInputError

DEFAULT_CORPUS_HUB = "OkayestProgrammer/MTR-DOCUMENT"
DEFAULT_CORPUS_DIR = "MTR-DOCUMENT"
_FILE_BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".csv": "csv"}
GOLD_TEXT_MISMATCH = "gold passage text differs from its MTR-DOCUMENT row (corpus row order?)"


@register("mtr")
def load(card: TaskCard, request: LoadRequest) -> TaskData:
    opts = card.loader_options
    split = request.split
    local = request.data_dir or card.local_path()
    if local is not None:
        location: str | Path = Path(local)
        revision = None
    else:
        location, revision = card.source.hub, card.source.revision
    rows = load_split(location, split=split, revision=revision, what=f"{card.name} ({split})")
    origin = describe(location, split, revision)

    corpus = _load_corpus(card, request, None if local is None else Path(local))
    queries, warnings = rows_to_queries(rows, split, origin, opts, corpus)
    if corpus is not None:
        check_queries(queries, corpus, origin, warnings)
    else:
        corpus = Corpus(ids=[], titles=[], texts=[])
    return TaskData(
        name=card.name, split=split, corpus=corpus, queries=queries, dataset_revision=revision, warnings=warnings
    )


def describe(location: str | Path, split: str, revision: str | None = None) -> str:
    """The file holding ``split`` when a local folder has exactly one, else ``<where> (<split> split)``."""
    path = Path(location)
    if path.is_dir():
        files = sorted(
            p
            for p in path.rglob(f"{split}[-.]*")
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
        return str(files[0]) if len(files) == 1 else f"{path} ({split} split)"
    if path.is_file():
        return str(path)
    return f"{location}@{revision or 'main'} ({split} split)"


# ------------------------------------------------------------------------------------------ corpus
def _load_corpus(card: TaskCard, request: LoadRequest, local: Path | None) -> Corpus | None:
    """The corpus, or None when the request does not need it (``require_corpus=False``)."""
    if not request.require_corpus:
        return None
    opts = card.loader_options
    corpus_split = opts.get("corpus_split", "train")
    hub = opts.get("corpus_hub", DEFAULT_CORPUS_HUB)
    what = f"{card.name} corpus"
    if request.corpus_path is not None:
        path = Path(request.corpus_path)
        revision = None
        if path.is_file():
            builder = _FILE_BUILDERS.get(path.suffix.lower())
            if builder is None:
                raise UserInputError(
                    f"--corpus {path}: unsupported file type (use a folder laid out like {hub} "
                    f"or one of {', '.join(sorted(_FILE_BUILDERS))})"
                )
            rows = load_split(path, builder=builder, data_files=str(path), split="train", what=what)
        else:
            rows = load_split(path, split=corpus_split, what=what)
        location: str | Path = path
    elif local is not None:
        sibling = local.parent / opts.get("corpus_dir", DEFAULT_CORPUS_DIR)
        if not sibling.is_dir():
            raise DataError(
                f"{card.name} needs the MTR-DOCUMENT corpus (Hub dataset {hub}, 1,041,047 Wikipedia passages; "
                f"document id = row position), expected next to the data at {sibling}: download it "
                f"(`hf download {hub} --repo-type dataset --local-dir DIR`) and pass `--corpus DIR`"
            )
        rows = load_split(sibling, split=corpus_split, what=what)
        location, revision = sibling, None
    else:
        revision = opts.get("corpus_revision")
        rows = load_split(hub, split=corpus_split, revision=revision, what=what)
        location = hub
    origin = describe(location, corpus_split, revision)
    corpus = corpus_by_position(rows, origin, titles=bool(opts.get("corpus_titles", True)))
    check_corpus(corpus, origin)
    return corpus


def corpus_by_position(rows, origin: str, titles: bool = True) -> Corpus:
    """Doc id = 0-based row position (``id`` is the Wikipedia article id and repeats across chunks)."""
    columns = rows.column_names
    if "text" not in columns:
        raise DataError(f"{origin}: the corpus needs a 'text' column (has {columns})")
    texts = list(rows["text"])
    for n, text in enumerate(texts):
        if not isinstance(text, str):
            raise DataError(f"{origin} record {n} ({n}): corpus 'text' is {type(text).__name__}, not a string")
    if titles and "title" in columns:
        title_list = [str(t or "") for t in rows["title"]]
    else:
        title_list = [""] * len(texts)
    return Corpus(ids=[str(n) for n in range(len(texts))], titles=title_list, texts=texts)


# ----------------------------------------------------------------------------------------- queries
def rows_to_queries(
    rows, split: str, origin: str, opts: dict[str, Any], corpus: Corpus | None = None
) -> tuple[list[ConversationalQuery], Counter]:
    """Per-turn rows -> queries, checking the conversation structure row by row."""
    warnings: Counter = Counter()
    per_conv = opts.get("turns_per_conversation")
    fixed_switch = opts.get("switch_turn")
    has_turn = "turn" in rows.column_names
    if not has_turn and not per_conv:
        raise DataError(
            f"{origin}: rows have no 'turn' column and the task card sets no "
            f"loader_options.turns_per_conversation to group them"
        )
    queries: list[ConversationalQuery] = []
    walk = _ConversationWalk()
    for n, row in enumerate(rows):
        if has_turn:
            turn = _row_turn(row, n, origin, walk.turn, per_conv)
        else:
            turn = n % per_conv + 1
        walk.next_row(turn)
        conv_id = f"{split}-{walk.index}"
        qid = f"{conv_id}_{turn}"
        where = f"{origin} record {n} ({qid})"
        messages = _row_messages(row, where, turn, walk.messages, conv_id, n)
        walk.messages = messages
        switch = _row_switch(row, where, fixed_switch, turn, walk.switch, conv_id)
        walk.switch = switch
        gold_id = _gold_id(row, where)
        if _gold_text_differs(row, gold_id, corpus):
            warnings[GOLD_TEXT_MISMATCH] += 1
        queries.append(_row_query(row, where, messages, conv_id, qid, turn, switch, gold_id))
    if not queries:
        raise DataError(f"{origin}: no rows")
    if per_conv:
        off = sum(1 for length in walk.lengths() if length != per_conv)
        if off:
            warnings[f"conversations without exactly {per_conv} turns (kept)"] += off
    return queries, warnings


@dataclass
class _ConversationWalk:
    """Where the row-by-row walk stands: the conversation being read and the lengths of the finished ones."""

    index: int = -1  # ordinal of the current conversation (its id is <split>-<index>)
    length: int = 0  # rows read of it
    turn: int = 0  # the previous row's turn
    messages: list[dict[str, str]] = field(default_factory=list)  # the previous row's: this row's history
    switch: Any = None  # the conversation's switch_turn (its first row's)
    finished_lengths: list[int] = field(default_factory=list)

    def next_row(self, turn: int) -> None:
        """A row of this turn is read; turn 1 starts a new conversation."""
        if turn == 1:
            if self.index >= 0:
                self.finished_lengths.append(self.length)
            self.index += 1
            self.length = 0
            self.messages = []
            self.switch = None
        self.length += 1
        self.turn = turn

    def lengths(self) -> list[int]:
        """Rows per conversation, the last one included."""
        return self.finished_lengths + ([self.length] if self.index >= 0 else [])


def _row_turn(row: dict[str, Any], n: int, origin: str, prev_turn: int, per_conv: int | None) -> int:
    """The row's ``turn``: 1 (a new conversation) or the previous row's turn + 1, within the release's count."""
    turn = row.get("turn")
    if isinstance(turn, bool) or not isinstance(turn, int) or turn < 1:
        raise DataError(f"{origin} record {n}: 'turn' must be a positive integer, got {turn!r}")
    if turn != 1 and not (turn == prev_turn + 1 and n > 0):
        expected = "1" if n == 0 else f"{prev_turn + 1} or 1 (a new conversation)"
        raise DataError(
            f"{origin} record {n}: turn {turn} where {expected} was expected: turns must "
            f"count 1, 2, ... within a conversation and restart at 1 for the next one"
        )
    if per_conv and turn > per_conv:
        raise DataError(
            f"{origin} record {n}: turn {turn} exceeds the {per_conv} turns per conversation of this release"
        )
    return turn


def _row_messages(
    row: dict[str, Any], where: str, turn: int, previous: list[dict[str, str]], conv_id: str, n: int
) -> list[dict[str, str]]:
    """The row's messages: 2 * turn of them, extending the previous row's of the conversation."""
    messages = _messages(row.get("messages"), where)
    if len(messages) != 2 * turn:
        raise DataError(
            f"{where}: {len(messages)} messages, expected {2 * turn} for turn {turn} (each row "
            f"holds the conversation up to and including this turn's answer); "
            f"are rows missing or out of order?"
        )
    if messages[:-2] != previous:
        i = next(i for i, (a, b) in enumerate(zip(messages, previous)) if a != b)
        raise DataError(
            f"{where}: messages do not extend the previous row of conversation {conv_id} "
            f"(record {n - 1}): message {i} differs; rows of one conversation must share "
            f"their history"
        )
    return messages


def _row_switch(
    row: dict[str, Any], where: str, fixed_switch: int | None, turn: int, conv_switch: Any, conv_id: str
) -> Any:
    """The row's switch_turn (the card's fixed one without the column), the same on every row of a conversation."""
    switch = row.get("switch_turn") if "switch_turn" in row else fixed_switch
    if switch is not None and (isinstance(switch, bool) or not isinstance(switch, int)):
        raise DataError(f"{where}: 'switch_turn' must be an integer (-1 = no switch), got {switch!r}")
    if turn != 1 and switch != conv_switch:
        raise DataError(
            f"{where}: switch_turn {switch} differs from {conv_switch} in the earlier rows of conversation {conv_id}"
        )
    return switch


def _gold_id(row: dict[str, Any], where: str) -> str:
    """The gold document's id: its MTR-DOCUMENT row position, agreeing with ``ground_truth_ctx`` when it has one."""
    gold = row.get("ground_truth_document_idx")
    if isinstance(gold, bool) or not isinstance(gold, int) or gold < 0:
        raise DataError(
            f"{where}: 'ground_truth_document_idx' must be a non-negative integer (an MTR-DOCUMENT "
            f"row position), got {gold!r}"
        )
    gold_ctx = row.get("ground_truth_ctx")
    if isinstance(gold_ctx, dict) and gold_ctx.get("document_idx") is not None and gold_ctx["document_idx"] != gold:
        raise DataError(
            f"{where}: ground_truth_document_idx {gold} disagrees with "
            f"ground_truth_ctx.document_idx {gold_ctx['document_idx']}"
        )
    return str(gold)


def _gold_text_differs(row: dict[str, Any], gold_id: str, corpus: Corpus | None) -> bool:
    gold_ctx = row.get("ground_truth_ctx")
    return (
        corpus is not None
        and isinstance(gold_ctx, dict)
        and isinstance(gold_ctx.get("text"), str)
        and gold_id in corpus
        and corpus.texts[corpus.position(gold_id)] != gold_ctx["text"]
    )


def _row_query(
    row: dict[str, Any],
    where: str,
    messages: list[dict[str, str]],
    conv_id: str,
    qid: str,
    turn: int,
    switch: Any,
    gold_id: str,
) -> ConversationalQuery:
    query = messages[-2]["content"]
    if not query.strip():
        raise DataError(f"{where}: empty current question (messages[-2])")
    meta: dict[str, Any] = {}
    if switch is not None:
        meta["switch_turn"] = switch
        if switch > 0:
            meta["after_switch"] = turn > switch
    if row.get("cluster_idx") is not None:
        meta["cluster_idx"] = row["cluster_idx"]
    ctxs = row.get("ctxs")
    if isinstance(ctxs, list):
        meta["ctxs_doc_ids"] = [
            str(c["document_idx"]) for c in ctxs if isinstance(c, dict) and c.get("document_idx") is not None
        ]
    answer = messages[-1]["content"]
    return ConversationalQuery(
        qid=qid,
        conversation_id=conv_id,
        turn_id=turn,
        history=tuple(Message(m["role"], m["content"]) for m in messages[:-2]),
        query=query,
        gold_rewrite=None,
        answers=(answer,) if answer.strip() else (),
        qrels={gold_id: 1},
        meta=meta,
    )


def _messages(raw: Any, where: str) -> list[dict[str, str]]:
    if not isinstance(raw, list) or not raw:
        raise DataError(f"{where}: 'messages' must be a non-empty list of {{role, content}}")
    out = []
    for i, msg in enumerate(raw):
        expected = USER if i % 2 == 0 else ASSISTANT
        if not isinstance(msg, dict) or not isinstance(msg.get("content"), str):
            raise DataError(f"{where}: message {i} needs a string 'content'")
        if msg.get("role") != expected:
            raise DataError(
                f"{where}: message {i} has role {msg.get('role')!r}, expected {expected!r} "
                f"(messages alternate user/assistant, starting with the user)"
            )
        out.append({"role": msg["role"], "content": msg["content"]})
    return out
