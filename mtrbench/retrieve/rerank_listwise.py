"""A listwise LLM reranker (``--rerank listwise:MODEL``): the LLM orders windows of the first stage's top
``rerank_k`` documents, as RankGPT and rank_llm do.

Windows slide from the bottom of the list up: the first window holds the last ``window`` documents, each next
one starts ``stride`` places higher, the last one starts at the top; each window is asked in the order the
previous replies left the list, so a relevant document climbs up to the top. One request per window, every
query's window of the same round asked together, through the LLM stage runner (response cache: a killed run
asks again only what was not answered; cost estimate for every round before the first request; re-asks of a
malformed reply; ``--max-failure-rate`` over the windows). A reply names passages by number (``[2] > [1] > [3]``):
the named ones come first in that order, a number named twice counts once, a number outside the window is
ignored and counted, and the window's passages it does not name follow in their order before the reply, as
rank_llm does. A window whose request fails keeps its order (counted). Documents below ``rerank_k`` keep the
first stage's order underneath.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from mtrbench.generation.prompts import template_hash
from mtrbench.infra.errors import UserInputError
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig, display_url, resolve_base_url
from mtrbench.llm.failure_rate import DEFAULT_MAX_FAILURE_RATE, JudgeFailures, most_common, raise_if_over
from mtrbench.llm.hf import is_hf_url, make_client
from mtrbench.llm.stage import Stage, StageItem, StageOptions, run_stages
from mtrbench.llm.types import ChatRequest
from mtrbench.retrieve.base import Retriever
from mtrbench.retrieve.options import PipelineOptions
from mtrbench.retrieve.rerank import FirstStageHead, reranked
from mtrbench.search.hits import Hits

log = logging.getLogger(__name__)

PASSAGE_WORDS = 120  # each passage is cut to its first words, so that a window fits a small model's context
SYSTEM = (
    "You sort search results. You get a search query and numbered passages. Order all the passages by how well "
    "they answer the query, the most useful first. Reply with the passage numbers only, in that order, each in "
    "square brackets and separated by ' > ', for example: [2] > [1] > [3]. Give every number exactly once and "
    "write nothing else."
)
USER = "Search query: {query}\n\n{passages}\n\nOrder the {n} passages above for the query. Numbers only, best first."
REPLY_FORMAT = "the passage numbers only, best first, as [2] > [1] > [3]"


@dataclass(frozen=True)
class ListwiseLLM:
    """The LLM behind ``listwise:MODEL`` and how its requests run (the eval command's LLM flags)."""

    judge: JudgeConfig
    cache: ResponseCache | None = None
    yes: bool = False
    show_progress: bool = True
    max_failure_rate: float = DEFAULT_MAX_FAILURE_RATE


@dataclass
class ListwiseCounts:
    windows: int = 0
    failed: int = 0
    unknown_ids: int = 0  # numbers outside the window, ignored
    duplicate_ids: int = 0
    missing_ids: int = 0  # passages a reply left out: after the named ones, in their order
    reasons: dict[str, int] = field(default_factory=dict)


def window_starts(n: int, window: int, stride: int) -> list[int]:
    """Where each window starts, bottom window first, the last one at 0."""
    if n <= window:
        return [0] if n else []
    starts, start = [], n - window
    while start > 0:
        starts.append(start)
        start -= stride
    return [*starts, 0]


def parse_permutation(size: int, reply: str) -> list[int]:
    """Every passage number of a reply in order (those outside 1..size too: counted when applied)."""
    text = reply or ""
    numbers = [int(n) for n in re.findall(r"\[\s*([0-9]+)\s*\]", text)]
    if not numbers and re.fullmatch(r"[\s0-9>,]+", text):
        numbers = [int(n) for n in re.findall(r"[0-9]+", text)]
    if not any(1 <= n <= size for n in numbers):
        raise ValueError(f"no passage number between 1 and {size}")
    return numbers


def apply_permutation(window: list[int], numbers: list[int], counts: ListwiseCounts) -> list[int]:
    seen: list[int] = []
    for n in numbers:
        if not 1 <= n <= len(window):
            counts.unknown_ids += 1
        elif n in seen:
            counts.duplicate_ids += 1
        else:
            seen.append(n)
    missing = [n for n in range(1, len(window) + 1) if n not in seen]
    counts.missing_ids += len(missing)
    return [window[n - 1] for n in seen + missing]


def window_messages(query: str, passages: list[str]) -> list[dict[str, str]]:
    block = "\n".join(f"[{i}] {' '.join(text.split()[:PASSAGE_WORDS])}" for i, text in enumerate(passages, start=1))
    user = USER.format(query=query, passages=block, n=len(passages))
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


class ListwiseReranker(FirstStageHead):
    def __init__(self, first: Retriever, model: str, stages: PipelineOptions, show_progress: bool = True) -> None:
        llm = stages.rerank_llm
        if not model:
            raise UserInputError("--rerank listwise:MODEL: name the model, e.g. listwise:qwen2.5-7b-instruct")
        if not isinstance(llm, ListwiseLLM):
            raise UserInputError(
                f"--rerank listwise:{model} needs an LLM endpoint: pass --reranker-base-url URL (or hf://MODEL)"
            )
        window = stages.rerank_window
        stride = stages.rerank_stride if stages.rerank_stride is not None else max(1, window // 2)
        if window < 2 or not 1 <= stride < window or stages.rerank_k < 1:
            raise UserInputError(
                f"--rerank-window {window} --rerank-stride {stride}: the window must hold at least 2 documents and "
                "the stride be smaller than the window (windows overlap, so a document can climb past them)"
            )
        self._wrap(first)
        self.llm, self.model = llm, model
        self.rerank_k, self.window, self.stride = stages.rerank_k, window, stride
        self.counts = ListwiseCounts()

    def settings(self) -> dict[str, Any]:
        judge = self.llm.judge
        base = judge.base_url if is_hf_url(judge.base_url) else display_url(resolve_base_url(judge))
        rerank: dict[str, Any] = {
            "model": self.model,
            "kind": "listwise",
            "base_url": base,
            "prompt_hash": template_hash(SYSTEM, USER, str(PASSAGE_WORDS)),
            "rerank_k": self.rerank_k,
            "window": self.window,
            "stride": self.stride,
            "order": "bottom-up sliding window",
            "document": f"title + ' ' + text, first {PASSAGE_WORDS} words",
            "below_rerank_k": "first-stage order",
        }
        if judge.temperature:
            rerank["temperature"] = judge.temperature
        return {**self.first.settings(), "rerank": rerank}

    def pipeline_slug(self) -> dict[str, Any]:
        first = getattr(self.first, "pipeline_slug", None)
        # window and stride change the scores: two of them never share a result folder
        name = f"listwise-{self.model}-w{self.window}s{self.stride}"
        return {**(first() if first else {}), "rerank": name, "rerankk": self.rerank_k}

    def search(self, queries: list[str], top_k: int, candidates: list[list[int] | None] | None = None) -> Hits:
        corpus = self.corpus()
        lists = self.first_lists(queries, max(top_k, self.rerank_k), candidates)
        heads = [docs[: self.rerank_k] for docs in lists]
        plans = [window_starts(len(head), self.window, self.stride) for head in heads]
        rounds = [self._round(queries, heads, plans, r) for r in range(max(map(len, plans), default=0))]
        client = make_client(self.llm.judge, self.llm.cache)
        options = StageOptions(self.llm.cache, False, self.llm.yes, self.llm.show_progress)
        for r in range(len(rounds)):
            stage = self._round(queries, heads, plans, r)  # in the order the earlier rounds left
            run = run_stages(
                [stage],
                None,
                options,
                clients={self.llm.judge.name: client},
                costed_later=rounds[r + 1 :] if r == 0 else (),
                confirm=r == 0,
            )
            self._apply(heads, plans, r, run.outcomes[0].records)
        self._check_failures()
        hits: Hits = []
        for head, docs in zip(heads, lists):
            scores = [float(len(head) - i) for i in range(len(head))]
            hits.append(reranked(corpus.ids, head, scores, docs[self.rerank_k :], top_k))
        return hits

    def _round(self, queries: list[str], heads: list[list[int]], plans: list[list[int]], r: int) -> Stage:
        corpus = self.corpus()
        items = []
        for q, (head, plan) in enumerate(zip(heads, plans)):
            if r >= len(plan):
                continue
            window = head[plan[r] : plan[r] + self.window]
            request = ChatRequest(
                key=f"q{q}",
                messages=window_messages(queries[q], [corpus.document_text(d) for d in window]),
                parse=partial(parse_permutation, len(window)),
                params={"max_tokens": 8 * len(window) + 16},
                reply_format=REPLY_FORMAT,
            )
            items.append(StageItem(request.key, request))
        return Stage(
            "rerank",
            self.llm.judge,
            items,
            desc=f"listwise rerank, window round {r + 1} ({self.model})",
            kind="reranker",
            unit="windows",
            completion_tokens_per_request=6 * self.window,
        )

    def _apply(self, heads: list[list[int]], plans: list[list[int]], r: int, records: dict[str, Any]) -> None:
        counts = self.counts
        for q, (head, plan) in enumerate(zip(heads, plans)):
            if r >= len(plan):
                continue
            counts.windows += 1
            record = records.get(f"q{q}")
            if record is None or not record.ok:
                counts.failed += 1
                reason = (record.error if record is not None else None) or "not answered"
                counts.reasons[reason] = counts.reasons.get(reason, 0) + 1
                continue
            start = plan[r]
            window = head[start : start + self.window]
            head[start : start + len(window)] = apply_permutation(window, list(record.value), counts)

    def _check_failures(self) -> None:
        c = self.counts
        if c.unknown_ids or c.duplicate_ids or c.missing_ids:
            log.info(
                f"--rerank listwise:{self.model}: {c.windows} windows; replies named {c.unknown_ids} numbers outside "
                f"their window (ignored) and {c.duplicate_ids} twice, and left out {c.missing_ids} passages (kept "
                "in their order after the named ones)"
            )
        if c.failed:
            log.warning(
                f"warning: --rerank listwise:{self.model}: {c.failed} of {c.windows} windows failed after retries "
                "and kept their order; a re-run asks only them"
            )
        failures = JudgeFailures(self.model, c.failed, c.windows, most_common(c.reasons), "reranker", "windows")
        raise_if_over([failures], self.llm.max_failure_rate, "the answered windows are cached; a re-run asks the rest")
