"""The record of a result scored against a corpus that lacks judged passages (``partial_corpus`` in the result
JSON, beside ``corpus_size``), and the note the eval table's title carries; mtrbench.pipeline.partial_corpus finds
and scores such corpora (docs/protocols.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KEY = "partial_corpus"  # where a result records it (beside corpus_size)


@dataclass(frozen=True)
class PartialCorpus:
    judged: int  # judgments (turn, passage) of the split's qrels
    not_in_corpus: int  # of them, naming a passage the corpus lacks
    scored: bool  # those counted all the same (an official protocol), else left out (trec_eval)

    def note(self) -> str:
        """What the eval table's title says."""
        how = "scored as judged" if self.scored else "their judgments left out"
        return f"partial corpus: {self.not_in_corpus:,} of {self.judged:,} judged passages not in the corpus ({how})"

    def to_json(self) -> dict[str, Any]:
        return {"judged": self.judged, "not_in_corpus": self.not_in_corpus, "scored": self.scored}

    @classmethod
    def from_result(cls, meta: Mapping[str, Any]) -> PartialCorpus | None:
        """The record of a result's ``mtrbench`` block; None for a full corpus (or a result older than the record)."""
        record = meta.get(KEY)
        if not isinstance(record, Mapping):
            return None
        return cls(int(record["judged"]), int(record["not_in_corpus"]), bool(record["scored"]))
