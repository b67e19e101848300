"""Relevance judgments (qrels) files, read and written in one place.

Two layouts of the same content, one judgment a line:

* TREC: ``qid iter docid grade``, fields separated by any white space, ``iter`` unused;
* BEIR: ``query-id<TAB>corpus-id<TAB>score`` after a header row naming those columns.

A grade is a whole number within ``MAX_GRADE`` of 0 (see there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from mtrbench.formats.lines import Locate, at_line, read_lines
from mtrbench.formats.run import id_problem
from mtrbench.infra.errors import DataError

Qrels = dict[str, dict[str, int]]  # query id -> document id -> grade

# trec_eval (and so pytrec_eval) keeps one counter per grade level up to the largest grade: a grade of 2**28 costs
# seconds and memory, 2**31 - 1 crashes the process, and past a C int the grade overflows. Real scales stop far
# below this bound (0-4, 0-100).
MAX_GRADE = 1_000_000


@dataclass(frozen=True)
class RepeatedJudgment:
    """A (query, document) pair judged again in one file; the later grade is the one kept."""

    where: str  # the later line
    qid: str
    doc_id: str
    earlier: int
    later: int


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
    on_repeat: Callable[[RepeatedJudgment], object] | None = None,
    trec_ids: bool = False,
) -> Qrels:
    """Judgments from the lines of a qrels file; blank lines are skipped.

    ``layout=None`` takes BEIR's when the first non-blank line is its header, else TREC's. A query and
    document judged twice keep the later grade; ``on_duplicate(qid, docid)`` hears of each such line, and
    ``on_repeat`` of it with both grades.
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
        if doc_id in docs and on_repeat is not None:
            on_repeat(RepeatedJudgment(locate(index), qid, doc_id, docs[doc_id], grade))
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
    if abs(grade) > MAX_GRADE:
        raise DataError(
            f"{locate(index)} ({qid}): {layout.columns[-1]} '{value}' is out of range: a grade lies within "
            f"{MAX_GRADE:,} of 0 (trec_eval keeps a counter per grade level up to the largest)"
        )
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
    ``parse_grade`` reads, within ``MAX_GRADE`` of 0; None for anything else (booleans, 1.5, inf, NaN, text)."""
    if isinstance(value, bool):
        return None
    grade = value if isinstance(value, int) else parse_grade(str(value)) if isinstance(value, (float, str)) else None
    return grade if grade is not None and abs(grade) <= MAX_GRADE else None


def read_qrels(
    path: str | Path, layout: QrelsLayout | None = None, on_repeat: Callable[[RepeatedJudgment], object] | None = None
) -> Qrels:
    """A qrels file, errors naming ``path:line``; ``layout=None``: TREC, or BEIR when it starts with the header.
    Ids a TREC run cannot hold and a file without any judgment are errors; a pair judged again keeps the later
    grade (``on_repeat`` hears of it)."""
    qrels = parse_qrels(read_lines(path, "qrels"), at_line(path), layout, on_repeat=on_repeat, trec_ids=True)
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
