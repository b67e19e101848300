"""BEIR folders: ``corpus.jsonl`` and ``queries.jsonl`` (records with ``_id``, ``text``, corpus ``title``)
and ``qrels/<split>.tsv`` in BEIR's qrels layout (``formats.qrels.BEIR``).

A prefix names another query set in the same folder (``<prefix>-queries.jsonl``, ``<prefix>-qrels/``);
mtrbench adds an optional ``conversations.jsonl`` sidecar. On the Hub (mteb's layout) the qrels are a
table with BEIR's columns, read by ``qrels_from_rows``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtrbench.formats.qrels import BEIR, Qrels, grade_of
from mtrbench.infra.errors import DataError


@dataclass(frozen=True)
class BeirFolder:
    path: Path
    prefix: str = ""

    def _named(self, name: str) -> str:
        return f"{self.prefix}-{name}" if self.prefix else name

    @property
    def corpus(self) -> Path:
        return self.path / "corpus.jsonl"

    @property
    def queries(self) -> Path:
        return self.path / self._named("queries.jsonl")

    def qrels(self, split: str) -> Path:
        return self.path / self._named("qrels") / f"{split}.tsv"

    @property
    def conversations(self) -> Path:
        return self.path / "conversations.jsonl"

    def check(self, split: str) -> None:
        """An error naming the first of corpus, queries and the split's qrels that is missing."""
        for path in (self.corpus, self.queries, self.qrels(split)):
            if not path.is_file():
                splits = sorted(p.stem for p in self.qrels(split).parent.glob("*.tsv"))
                extra = f" (qrels splits here: {splits})" if path == self.qrels(split) and splits else ""
                raise DataError(f"BEIR folder {self.path}: missing {path.name}{extra}")


def qrels_from_rows(rows: Any, origin: str) -> Qrels:
    """Judgments from a ``datasets`` table with BEIR's qrels columns (``query-id``, ``corpus-id``, ``score``)."""
    missing = [c for c in BEIR.columns if c not in rows.column_names]
    if missing:
        raise DataError(f"{origin}: qrels need columns {list(BEIR.columns)} (header row), missing {missing}")
    table = rows.select_columns(list(BEIR.columns)).to_dict()  # by column: row dicts are slow for large tables
    qrels: Qrels = {}
    for n, (qid, doc_id, score) in enumerate(zip(*(table[c] for c in BEIR.columns))):
        if qid is None or doc_id is None or score is None:
            raise DataError(f"{origin} record {n}: incomplete qrels row")
        grade = grade_of(score)
        if grade is None:
            raise DataError(f"{origin} record {n} ({qid}): score '{score}' is not an integer")
        qrels.setdefault(str(qid), {})[str(doc_id)] = grade
    return qrels
