"""What the runner needs from a retriever."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from mtrbench.data.model import Corpus
from mtrbench.search.hits import Hits


@runtime_checkable
class Retriever(Protocol):
    name: str  # model name as recorded in results (HF id for aliases)
    revision: str
    tokenizer: Any  # None when the retriever has no length limit (BM25)
    max_length: int | None
    query_prompt: str

    def settings(self) -> dict[str, Any]:
        """Every setting that changes scores (recorded in results)."""

    def index(self, corpus: Corpus) -> None: ...

    def search(self, queries: list[str], top_k: int, candidates: list[list[int] | None] | None = None) -> Hits: ...
