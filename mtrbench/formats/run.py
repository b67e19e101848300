"""Run files: TREC's ``qid Q0 docid rank score tag``, one retrieved document a line, and on reading also the
JSON run BEIR and pytrec_eval write, ``{qid: {docid: score}}`` (told apart by content: a file whose first
non-blank character is ``{``).

Within a query, documents are written in the order trec_eval ranks them (the rank column is ignored on
reading, as trec_eval ignores it): score descending, ties by document id descending.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mtrbench.formats.lines import at_line, read_lines
from mtrbench.infra.errors import DataError
from mtrbench.infra.numeric import finite

Run = dict[str, dict[str, float]]  # query id -> document id -> score


def ranked(docs: dict[str, float]) -> list[tuple[str, float]]:
    """trec_eval's order: score descending, then document id descending."""
    return sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)


def ranked_positions(doc_ids: Sequence[str], scores: Sequence[float]) -> list[int]:
    """The positions of ``doc_ids`` (with ``scores`` alongside) in :func:`ranked`'s order, the order a run file
    written from them lists them in."""
    return sorted(range(len(doc_ids)), key=lambda i: (scores[i], doc_ids[i]), reverse=True)


_WHITESPACE = re.compile(r"\s")


def id_problem(value: str) -> str | None:
    """Why ``value`` cannot be a query or document id in a TREC file (fields are split on white space),
    or None when it can."""
    if not value:
        return "is empty"
    if _WHITESPACE.search(value):
        return "contains white space, which a TREC run or qrels file cannot hold"
    return None


def read_run(path: str | Path) -> Run:
    """A run file, TREC lines or a JSON run (module docstring). Errors name ``path:line`` (``path`` and the
    query and document in a JSON run): a document listed twice for one query, a score that is not a finite
    number (NaN would rank arbitrarily), a file with no line at all."""
    if _first_character(path) == "{":
        return _read_json_run(path)
    run: Run = {}
    locate = at_line(path)
    for index, line in enumerate(read_lines(path, "run")):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 6:
            raise DataError(
                f"{locate(index)}: a run line needs 6 fields 'qid Q0 docid rank score tag', got {len(fields)}"
            )
        qid, _, doc_id, _, score, _ = fields
        value = finite(score, locate(index), "score")
        docs = run.setdefault(qid, {})
        if doc_id in docs:
            raise DataError(f"{locate(index)}: document '{doc_id}' appears twice for query '{qid}'")
        docs[doc_id] = value
    if not run:
        raise DataError(f"run file {path} is empty (no 'qid Q0 docid rank score tag' line)")
    return run


def _first_character(path: str | Path) -> str:
    """The first character that is not white space ("" for a blank file)."""
    for line in read_lines(path, "run"):
        if line.strip():
            return line.lstrip()[0]
    return ""


_JSON_LAYOUT = "a JSON run {query id: {document id: score}} (BEIR's and pytrec_eval's layout)"


class _RepeatedKey(Exception):
    """A key twice in one JSON object (Python's json would keep the last silently)."""


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document: dict[str, Any] = {}
    for key, value in pairs:
        if key in document:
            raise _RepeatedKey(key)
        document[key] = value
    return document


def _read_json_run(path: str | Path) -> Run:
    text = "".join(read_lines(path, "run"))
    try:
        document = json.loads(text, object_pairs_hook=_no_repeated_keys)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); expected {_JSON_LAYOUT} "
            f"or TREC lines 'qid Q0 docid rank score tag'"
        ) from None
    except _RepeatedKey as exc:
        raise DataError(f"{path}: '{exc.args[0]}' appears twice in one JSON object; expected {_JSON_LAYOUT}") from None
    if not isinstance(document, dict) or not document:
        got = "an empty object" if isinstance(document, dict) else type(document).__name__
        raise DataError(f"{path}: expected {_JSON_LAYOUT}, got {got}")
    run: Run = {}
    for qid, docs in document.items():
        if not isinstance(docs, dict):
            raise DataError(
                f"{path}: query '{qid}' holds {type(docs).__name__}, not an object {{document id: score}}; "
                f"expected {_JSON_LAYOUT}"
            )
        for what, value in (("query id", qid), *(("document id", doc_id) for doc_id in docs)):
            problem = id_problem(value)
            if problem is not None:
                raise DataError(f"{path}: {what} '{value}' (query '{qid}') {problem}")
        if docs:  # a query without documents is absent, as in a TREC file
            run[qid] = {
                doc_id: finite(score, f"{path} (query '{qid}', document '{doc_id}')", "score")
                for doc_id, score in docs.items()
            }
    if not run:
        raise DataError(f"run file {path} is empty (no query with a document)")
    return run


def run_tag(model: str, strategy: str) -> str:
    """``mtrbench-MODEL-STRATEGY`` as one whitespace-free token (TREC tools split lines on whitespace).

    The model is named as given (an alias stays an alias); a path or Hub id keeps its last part.
    """
    name = model.rstrip("/").rsplit("/", 1)[-1] if "|" not in model else model
    token = f"mtrbench-{name}-{strategy}"
    return re.sub(r"[^A-Za-z0-9._:+=|@-]+", "_", token)


def format_run(run: Run, tag: str) -> str:
    """The text of a run file, each query's documents in ``ranked`` order with ranks from 1."""
    return "".join(
        f"{qid} Q0 {doc_id} {rank} {score:.9g} {tag}\n"
        for qid, docs in run.items()
        for rank, (doc_id, score) in enumerate(ranked(docs), 1)
    )
