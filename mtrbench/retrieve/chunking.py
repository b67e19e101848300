"""Parent-child retrieval (H-RAG §3.1, §3.3): documents split into overlapping sentence windows
(children), the children indexed and searched, each parent scored by its best child (max; H-RAG's
strategy 1, ``rank_parents = false``). With a ``parent_scorer`` (strategy 2, ``rank_parents = true``)
the parents of the retrieved children are the candidates, and each is scored by the same model on its
own whole text (the scorer indexes the parent corpus and searches only within those candidates).

Sentences come from a rule-based splitter (H-RAG uses one too): a sentence ends at ``.``, ``!`` or
``?`` (closing quotes and brackets included) followed by whitespace and an upper-case letter, a digit
or an opening quote, except after a few common abbreviations and single-letter initials.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mtrbench.data.model import Corpus
from mtrbench.infra.errors import MtrbenchError
from mtrbench.retrieve.base import Retriever
from mtrbench.search.hits import Hits

MIN_CANDIDATES = 100  # children retrieved per query: max(top_k, this) unless candidate_k is given
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_ABBREVIATIONS = {
    "mr",
    "mrs",
    "ms",
    "dr",
    "prof",
    "st",
    "jr",
    "sr",
    "vs",
    "etc",
    "e.g",
    "i.e",
    "no",
    "fig",
    "approx",
    "ca",
    "c",
    "inc",
    "ltd",
    "co",
    "mt",
    "ft",
    "u.s",
}


def split_sentences(text: str) -> list[str]:
    sentences: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        head = text[start : match.start()].rstrip("\"')]")
        last_word = head.rsplit(None, 1)[-1].rstrip(".!?").lower() if head.split() else ""
        if last_word in _ABBREVIATIONS or (len(last_word) == 1 and last_word.isalpha()):
            continue  # "Dr. Lorne", "J. S. Bach": not a sentence end
        sentences.append(text[start : match.end()].strip())
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


@dataclass(frozen=True)
class Chunking:
    size: int = 3  # sentences per child
    stride: int = 2  # sentences between the starts of consecutive children

    @classmethod
    def parse(cls, spec: str) -> Chunking:
        """``sentences:SIZE:STRIDE``, e.g. ``sentences:3:2`` (H-RAG's)."""
        parts = spec.split(":")
        try:
            if parts[0] != "sentences" or len(parts) != 3:
                raise ValueError
            chunking = cls(int(parts[1]), int(parts[2]))
        except ValueError:
            raise MtrbenchError(f"--chunking takes sentences:SIZE:STRIDE (e.g. sentences:3:2), got '{spec}'") from None
        if chunking.size < 1 or not 1 <= chunking.stride:
            raise MtrbenchError(f"--chunking {spec}: size and stride must be positive")
        if chunking.stride > chunking.size:
            raise MtrbenchError(
                f"--chunking {spec}: a stride larger than the size leaves the sentences between windows in no child "
                f"(never retrievable); give a stride of at most {chunking.size}"
            )
        return chunking

    @property
    def label(self) -> str:
        return f"sentences-{self.size}-{self.stride}"

    def windows(self, sentences: list[str]) -> list[str]:
        """Windows of ``size`` sentences every ``stride``; the last one reaches the end; a short text is one child."""
        if len(sentences) <= self.size:
            return [" ".join(sentences)] if sentences else [""]
        out = []
        for start in range(0, len(sentences), self.stride):
            out.append(" ".join(sentences[start : start + self.size]))
            if start + self.size >= len(sentences):
                break
        return out


def child_corpus(corpus: Corpus, chunking: Chunking) -> tuple[Corpus, list[int]]:
    """Children (id ``<parent>#<n>``, the parent's title, a window of its text) and each child's parent position."""
    ids, titles, texts, parents = [], [], [], []
    for p in range(len(corpus)):
        for n, window in enumerate(chunking.windows(split_sentences(corpus.texts[p]))):
            ids.append(f"{corpus.ids[p]}#{n}")
            titles.append(corpus.titles[p])
            texts.append(window)
            parents.append(p)
    return Corpus(ids, titles, texts), parents


class ParentChildRetriever:
    """Any retriever over the children; parents ranked by their best retrieved child."""

    def __init__(
        self,
        inner: Retriever,
        chunking: Chunking,
        candidate_k: int | None = None,
        parent_scorer: Retriever | None = None,
    ) -> None:
        if candidate_k is not None and candidate_k < 1:
            raise MtrbenchError("--candidate-k must be positive")
        self.inner, self.chunking, self.candidate_k = inner, chunking, candidate_k
        self.parent_scorer = parent_scorer
        self.name, self.revision = inner.name, inner.revision
        self.tokenizer, self.max_length, self.query_prompt = inner.tokenizer, inner.max_length, inner.query_prompt
        self._parents: list[int] = []
        self._children_of: dict[int, list[int]] = {}
        self._ids: list[str] = []

    @property
    def cache_report(self):
        return getattr(self.inner, "cache_report", None)

    def children_k(self, top_k: int) -> int:
        return self.candidate_k if self.candidate_k is not None else max(top_k, MIN_CANDIDATES)

    def settings(self) -> dict[str, Any]:
        inner = self.inner.settings()
        return {
            "kind": "parent-child",
            "chunking": self.chunking.label,
            "splitter": "rule-based regex (docs/pipelines.md)",
            "candidate_k": self.candidate_k,
            "candidate_k_default": f"max(top_k, {MIN_CANDIDATES})",
            "aggregation": (
                "candidate parents rescored on their own text" if self.parent_scorer else "max child score"
            ),
            "rank_parents": self.parent_scorer is not None,
            "children": len(self._parents),
            "dtype": inner.get("dtype"),
            "children_retriever": inner,
        }

    def pipeline_slug(self) -> dict[str, Any]:
        inner = getattr(self.inner, "pipeline_slug", None)
        return {
            **(inner() if inner else {}),
            "chunking": self.chunking.label,
            "candk": self.candidate_k,
            "rankparents": True if self.parent_scorer is not None else None,
        }

    def index(self, corpus: Corpus) -> None:
        children, self._parents = child_corpus(corpus, self.chunking)
        self._children_of = {}
        for child, parent in enumerate(self._parents):
            self._children_of.setdefault(parent, []).append(child)
        self._ids = corpus.ids
        self.inner.index(children)
        if self.parent_scorer is not None:
            self.parent_scorer.index(corpus)

    def search(self, queries: list[str], top_k: int, candidates: list[list[int] | None] | None = None) -> Hits:
        child_candidates = None
        if candidates is not None:
            child_candidates = [
                None if pool is None else [c for p in pool for c in self._children_of.get(p, [])] for pool in candidates
            ]
        hits: Hits = []
        pools: list[list[int] | None] = []
        for children, scores in self.inner.search(queries, self.children_k(top_k), child_candidates):
            best: dict[int, float] = {}
            for child, score in zip(children, scores):
                parent = self._parents[child]
                if parent not in best or score > best[parent]:
                    best[parent] = score
            order = sorted(best, key=lambda p: (best[p], self._ids[p]), reverse=True)
            hits.append((order[:top_k], [best[p] for p in order[:top_k]]))
            pools.append(order)
        if self.parent_scorer is None:
            return hits
        # strategy 2: every candidate parent (not only the top_k by best child) scored on its own text
        return self.parent_scorer.search(queries, top_k, pools)
