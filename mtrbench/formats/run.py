"""TREC run files: ``qid Q0 docid rank score tag``, one retrieved document a line.

Within a query, documents are written in the order trec_eval ranks them (the rank column is ignored on
reading, as trec_eval ignores it): score descending, ties by document id descending.
"""

from __future__ import annotations

import re
from pathlib import Path

from mtrbench.formats.lines import at_line, read_lines
from mtrbench.infra.errors import DataError
from mtrbench.infra.numeric import finite

Run = dict[str, dict[str, float]]  # query id -> document id -> score


def ranked(docs: dict[str, float]) -> list[tuple[str, float]]:
    """trec_eval's order: score descending, then document id descending."""
    return sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)


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
    """A run file. Errors name ``path:line``: a document listed twice for one query, a score that is not a
    finite number (NaN would rank arbitrarily), a file with no line at all."""
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
