"""The audit plan: which queries are audited and the judge items each dimension asks about.

Instances follow MTR-SUITE §3: a turn (history H_i, query q_i, gold set G_i). Gold = qrels grade at or
above the task's relevance level. Items are deterministic given the task, the seed and the hard
negatives, so a restarted audit rebuilds the same prompts and can tell which ones the log has answered.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mtrbench.audit import prompts
from mtrbench.audit.defaults import ALIGNMENT, COMPLETENESS, DIMENSIONS, FAITHFULNESS, QUALITY
from mtrbench.audit.prompts import ShownDocument
from mtrbench.data.model import ConversationalQuery, Corpus
from mtrbench.infra.errors import DataError, UserInputError

NEEDS_ANSWER = (FAITHFULNESS, QUALITY)


@dataclass(frozen=True)
class AuditItem:
    """One question to one judge: a prompt plus what is needed to interpret the reply."""

    dimension: str
    instance_id: str
    qid: str
    messages: list[dict[str, str]]
    doc_ids: tuple[str, ...]  # documents shown; completeness: in the shown (shuffled) order
    gold_doc: str | None = None  # completeness only
    # completeness: shown slot i holds pool[permutation[i]], where pool = [gold, negatives best-ranked first]
    permutation: tuple[int, ...] | None = None

    @property
    def key(self) -> str:
        return f"{self.dimension}|{self.instance_id}"

    @property
    def prompt_hash(self) -> str:
        return prompt_hash(self.messages)

    @property
    def gold_position(self) -> int | None:
        """1-based slot of the gold document among the shown candidates."""
        return self.doc_ids.index(self.gold_doc) + 1 if self.gold_doc is not None else None

    def parser(self) -> Callable[[str], float]:
        if self.dimension == COMPLETENESS:
            return prompts.choice_parser(len(self.doc_ids))
        return prompts.parse_rating

    @property
    def reply_format(self) -> str:
        """The format restated when a reply could not be read."""
        return prompts.COMPLETENESS_FORMAT if self.dimension == COMPLETENESS else prompts.RATING_FORMAT

    def describe(self) -> dict[str, Any]:
        """The instance as written to instances.jsonl (and repeated in each log record)."""
        out: dict[str, Any] = {
            "dimension": self.dimension,
            "instance_id": self.instance_id,
            "qid": self.qid,
            "prompt_hash": self.prompt_hash,
        }
        if self.dimension == COMPLETENESS:
            out.update(
                candidates=list(self.doc_ids),
                gold_doc=self.gold_doc,
                gold_position=self.gold_position,
                permutation=list(self.permutation or ()),
            )
        else:
            out["doc_ids"] = list(self.doc_ids)
        return out


@dataclass
class AuditPlan:
    items: list[AuditItem]
    queries: list[ConversationalQuery]
    dimensions: list[str]
    notes: Counter = field(default_factory=Counter)


def prompt_hash(messages: list[dict[str, str]]) -> str:
    canonical = json.dumps(messages, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def gold_docs(query: ConversationalQuery, relevance_level: int) -> list[str]:
    """Gold documents, highest grade first (ties in qrels order)."""
    gold = [(doc_id, grade) for doc_id, grade in query.qrels.items() if grade >= relevance_level]
    return [doc_id for doc_id, _ in sorted(gold, key=lambda item: -item[1])]


def parse_dimensions(spec: str | None) -> list[str] | None:
    if not spec:
        return None
    wanted = [d.strip() for d in spec.split(",") if d.strip()]
    unknown = [d for d in wanted if d not in DIMENSIONS]
    if unknown:
        raise UserInputError(
            f"--dimensions: unknown dimension(s) {', '.join(unknown)}; choose from {', '.join(DIMENSIONS)}"
        )
    return [d for d in DIMENSIONS if d in wanted]


def select_queries(
    queries: Sequence[ConversationalQuery], relevance_level: int, limit: int | None, seed: int
) -> tuple[list[ConversationalQuery], Counter]:
    """Queries with gold, or a seeded sample of ``limit`` of them (in task order).

    The sample is a prefix of one seeded shuffle, so raising ``--sample`` keeps every query already audited.
    """
    notes: Counter = Counter()
    eligible = [q for q in queries if gold_docs(q, relevance_level)]
    if len(eligible) < len(queries):
        notes["queries without gold documents (not audited)"] = len(queries) - len(eligible)
    if not eligible:
        raise DataError("no query of this task has a gold document: nothing to audit")
    if limit is not None and limit < len(eligible):
        order = list(range(len(eligible)))
        random.Random(seed).shuffle(order)
        eligible = [eligible[i] for i in sorted(order[:limit])]
    return eligible, notes


def supported_dimensions(
    queries: Sequence[ConversationalQuery], requested: list[str] | None
) -> tuple[list[str], list[str]]:
    """(dimensions to run, dimensions left out because no audited query has a reference answer)."""
    wanted = list(requested or DIMENSIONS)
    if any(q.answers for q in queries):
        return wanted, []
    return [d for d in wanted if d not in NEEDS_ANSWER], [d for d in wanted if d in NEEDS_ANSWER]


def shuffled_pool(gold: str, negatives: Sequence[str], seed: int, qid: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Candidates in a random order drawn from (seed, qid) alone, so --sample and resuming never change it."""
    pool = [gold, *negatives]
    permutation = list(range(len(pool)))
    random.Random(f"mtr-eval:{seed}:{qid}").shuffle(permutation)
    return tuple(pool[i] for i in permutation), tuple(permutation)


def build_plan(
    queries: list[ConversationalQuery],
    corpus: Corpus,
    dimensions: list[str],
    relevance_level: int,
    negatives: dict[str, list[str]] | None,
    n_negatives: int,
    seed: int,
    max_doc_chars: int | None,
    notes: Counter | None = None,
) -> AuditPlan:
    notes = Counter() if notes is None else notes

    def shown(doc_id: str) -> ShownDocument:
        i = corpus.position(doc_id)
        return ShownDocument(corpus.titles[i], corpus.texts[i])

    items: list[AuditItem] = []
    for q in queries:
        gold = gold_docs(q, relevance_level)
        if ALIGNMENT in dimensions:
            for doc_id in gold:
                items.append(
                    AuditItem(
                        ALIGNMENT,
                        f"{q.qid}::{doc_id}",
                        q.qid,
                        prompts.alignment_messages(q.history, q.query, shown(doc_id), max_doc_chars),
                        (doc_id,),
                    )
                )
        if COMPLETENESS in dimensions:
            found = (negatives or {}).get(q.qid, [])
            if not found:
                notes["completeness: no hard negative found (instance skipped)"] += 1
            else:
                if len(found) < n_negatives:
                    notes["completeness: fewer hard negatives than asked"] += 1
                candidates, permutation = shuffled_pool(gold[0], found, seed, q.qid)
                items.append(
                    AuditItem(
                        COMPLETENESS,
                        q.qid,
                        q.qid,
                        prompts.completeness_messages(
                            q.history, q.query, [shown(d) for d in candidates], max_doc_chars
                        ),
                        candidates,
                        gold[0],
                        permutation,
                    )
                )
        if any(d in dimensions for d in NEEDS_ANSWER):
            if not q.answers:
                notes["no reference answer (faithfulness/quality skipped)"] += 1
                continue
            documents = [shown(d) for d in gold]
            if FAITHFULNESS in dimensions:
                items.append(
                    AuditItem(
                        FAITHFULNESS,
                        q.qid,
                        q.qid,
                        prompts.faithfulness_messages(q.history, q.query, q.answers[0], documents, max_doc_chars),
                        tuple(gold),
                    )
                )
            if QUALITY in dimensions:
                items.append(
                    AuditItem(
                        QUALITY,
                        q.qid,
                        q.qid,
                        prompts.quality_messages(q.history, q.query, q.answers[0], documents, max_doc_chars),
                        tuple(gold),
                    )
                )
    return AuditPlan(items, queries, dimensions, notes)
