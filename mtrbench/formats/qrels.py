"""Relevance judgments (qrels) files, read and written in one place.

Two layouts of the same content, one judgment a line:

* TREC: ``qid iter docid grade``, fields separated by any white space, ``iter`` unused;
* BEIR: ``query-id<TAB>corpus-id<TAB>score`` after a header row naming those columns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from mtrbench.formats.lines import Locate, at_line, read_lines
from mtrbench.formats.run import id_problem
from mtrbench.infra.errors import DataError

Qrels = dict[str, dict[str, int]]  # query id -> document id -> grade


@dataclass(frozen=True)
class QrelsLayout:
    """Where a qrels line keeps its fields: the query id first, the document id and grade last."""

    columns: tuple[str, ...]  # as a header and error messages name them
    separator: str | None  # None: any run of white space
    header: bool  # the first non-blank line names the columns

    @property
    def shape(self) -> str:
        return ("<TAB>" if self.separator == "\t" else " ").join(self.columns)

    def split(self, line: str) -> list[str]:
        if self.separator is None:
            return line.split()
        return [field.strip() for field in line.split(self.separator)]


TREC = QrelsLayout(("qid", "iter", "docid", "grade"), separator=None, header=False)
BEIR = QrelsLayout(("query-id", "corpus-id", "score"), separator="\t", header=True)


def parse_qrels(
    lines: Iterable[str],
    locate: Locate,
    layout: QrelsLayout | None = TREC,
    *,
    on_duplicate: Callable[[str, str], object] | None = None,
    trec_ids: bool = False,
) -> Qrels:
    """Judgments from the lines of a qrels file; blank lines are skipped.

    ``layout=None`` takes BEIR's when the first non-blank line is its header, else TREC's. A query and
    document judged twice keep the later grade; ``on_duplicate(qid, docid)`` hears of each such line.
    ``trec_ids``: ids a TREC file cannot hold (BEIR's tab-separated layout can) are an error.
    """
    qrels: Qrels = {}
    header_due = layout is not None and layout.header
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        if layout is None:
            layout = BEIR if BEIR.split(line) == list(BEIR.columns) else TREC
            header_due = layout.header
        fields = layout.split(line)
        if header_due:
            header_due = False
            if fields != list(layout.columns):
                raise DataError(f"{locate(index)}: qrels need the header '{layout.shape}'")
            continue
        qid, doc_id, grade = _judgment(fields, layout, locate, index, trec_ids)
        docs = qrels.setdefault(qid, {})
        if doc_id in docs and on_duplicate is not None:
            on_duplicate(qid, doc_id)
        docs[doc_id] = grade
    if header_due:
        raise DataError(f"{locate(0)}: qrels need the header '{layout.shape}'")
    return qrels


def _judgment(
    fields: list[str], layout: QrelsLayout, locate: Locate, index: int, trec_ids: bool
) -> tuple[str, str, int]:
    if len(fields) != len(layout.columns):
        count = f"{len(fields)} field" + ("" if len(fields) == 1 else "s")
        raise DataError(f"{locate(index)}: a qrels line needs '{layout.shape}', got {count}")
    qid, doc_id, value = fields[0], fields[-2], fields[-1]
    for name, field in ((layout.columns[0], qid), (layout.columns[-2], doc_id)):
        if not field:
            raise DataError(f"{locate(index)}: a qrels line needs '{layout.shape}', got an empty {name}")
        problem = id_problem(field) if trec_ids else None
        if problem:
            raise DataError(f"{locate(index)}: {name} '{field}' {problem}")
    grade = parse_grade(value)
    if grade is None:
        raise DataError(f"{locate(index)} ({qid}): {layout.columns[-1]} '{value}' is not an integer")
    return qid, doc_id, grade


def parse_grade(text: str) -> int | None:
    """``2`` -> 2 and ``2.0`` -> 2 (some tools write grades as floats); anything else -> None."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return None
    return int(number) if number.is_integer() else None


def grade_of(value: object) -> int | None:
    """A grade from a parsed value (JSON, a ``datasets`` column): integers, integral floats and strings that
    ``parse_grade`` reads; None for anything else (booleans, 1.5, inf, NaN, text)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, (float, str)):
        return parse_grade(str(value))
    return None


def read_qrels(path: str | Path, layout: QrelsLayout | None = None) -> Qrels:
    """A qrels file, errors naming ``path:line``; ``layout=None``: TREC, or BEIR when it starts with the header.
    Ids a TREC run cannot hold and a file without any judgment are errors."""
    qrels = parse_qrels(read_lines(path, "qrels"), at_line(path), layout, trec_ids=True)
    if not qrels:
        raise DataError(f"qrels file {path} is empty (no judgment)")
    return qrels


def format_qrels(qrels: Qrels, layout: QrelsLayout = TREC) -> str:
    """The text of a qrels file (TREC's unused ``iter`` column is written as 0)."""
    separator = layout.separator or " "
    unused = ["0"] * (len(layout.columns) - 3)
    header = [separator.join(layout.columns) + "\n"] if layout.header else []
    return "".join(
        header
        + [
            separator.join([qid, *unused, doc_id, str(grade)]) + "\n"
            for qid, docs in qrels.items()
            for doc_id, grade in docs.items()
        ]
    )
