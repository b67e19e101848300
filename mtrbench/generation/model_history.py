"""The model-backed history step: a rewriter model writes, per query, a stand-alone question (CORAL's
Rewrite, the MTRAG/QReCC rewrite setting) or a summary of the history (CORAL's LLM summarization), before
any retrieval or generation. Serialization then reads the texts (``HistoryStrategy.with_texts``).

A first turn has no history: its rewrite is the question itself and its summary empty, with no request.
Replies go through ``mtrbench.llm`` (retries, re-asks, cache, cost estimate, circuit breaker). A query whose
request still fails (transport or malformed reply, after retries) gets no text, and no other history stands in
for it: ``eval`` leaves it out of the history's scores (counted in ``settings.rewriter.failures`` and
``queries.excluded_rewriter_failed``; a result with failures is evaluated again on the next run, which asks only
the failed requests), and ``generate`` records the turn as failed. Every failed request and every malformed
reply is kept, redacted, in ``ModelHistoryReport.replies`` for the caller's log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from mtrbench.data.model import ConversationalQuery
from mtrbench.generation.expansion_prompts import (
    EXPANSION_FORMATS,
    EXPANSION_SYSTEMS,
    MAX_TOKENS,
    expansion_messages,
    parse_expansion,
)
from mtrbench.generation.prompts import MODEL_HISTORY_PROMPTS, parse_model_history, template_hash
from mtrbench.infra.errors import UserInputError
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig, display_url, resolve_base_url
from mtrbench.llm.failure_rate import DEFAULT_MAX_FAILURE_RATE
from mtrbench.llm.hf import is_hf_url
from mtrbench.llm.stage import Stage, StageItem, StageOptions, StageRecord, run_stage
from mtrbench.llm.types import ChatRequest, ChatRunner
from mtrbench.serialize.expansion import EXPANSION_KINDS
from mtrbench.serialize.history import MODEL_STRATEGIES

# what a rewriter model writes: "rewrite", "summary", and pseudo-documents for query expansion (query2doc, hyde,
# mugi), which every turn asks for, a first turn too
KINDS = tuple(MODEL_STRATEGIES.values())
MAX_FAILED_SHOWN = 20


@dataclass
class RewriterOptions:
    """The model that writes rewrites or summaries, and how to run it."""

    judge: JudgeConfig
    cache: ResponseCache | None = None
    yes: bool = False  # skip the cost confirmation
    dry_run: bool = False  # print prompts and counts, send nothing
    show_progress: bool = True
    max_failure_rate: float = DEFAULT_MAX_FAILURE_RATE  # eval stops (exit 1) when more of the requests fail


@dataclass
class ModelHistoryReport:
    kind: str
    model: str
    base_url: str  # without credentials
    prompt_hash: str
    temperature: float | None = None  # recorded only when not 0 (see rewriter_identity)
    queries: int = 0
    without_history: int = 0  # first turns: no request
    requested: int = 0  # requests planned (cached ones included)
    cached: int = 0
    failures: int = 0
    failed_qids: list[str] = field(default_factory=list)
    failure_reasons: dict[str, int] = field(default_factory=dict)  # reason -> how many requests failed with it
    http_requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    on_failure: str = "query left out of the scores (eval) / turn recorded as failed (generate)"
    # per request that failed or needed a re-ask: qid, ok, error, malformed replies (redacted); for the reply log,
    # not the result document
    replies: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "replies" and not (k == "temperature" and v is None)}

    def failed(self) -> set[str]:
        """Every query whose request failed (``failed_qids`` shows only the first ``MAX_FAILED_SHOWN``)."""
        return {r["qid"] for r in self.replies if not r["ok"]}


def prompt_hash(kind: str) -> str:
    if kind in EXPANSION_KINDS:
        return template_hash(kind, EXPANSION_SYSTEMS[kind], "history/question v1")
    return template_hash(kind, MODEL_HISTORY_PROMPTS[kind][0])


def history_requests(kind: str, queries: Sequence[ConversationalQuery]) -> list[ChatRequest]:
    if kind not in KINDS:
        raise UserInputError(f"model history kind must be one of {', '.join(KINDS)}, got '{kind}'")
    if kind in EXPANSION_KINDS:
        return [
            ChatRequest(
                key=q.qid,
                messages=expansion_messages(kind, q.history, q.query),
                parse=partial(parse_expansion, kind),
                params={"max_tokens": MAX_TOKENS[kind]},
                reply_format=EXPANSION_FORMATS[kind],
            )
            for q in queries
        ]
    build = MODEL_HISTORY_PROMPTS[kind][1]
    return [
        ChatRequest(
            key=q.qid,
            messages=build(q.history, q.query),
            parse=partial(parse_model_history, kind),
            params={"max_tokens": 128 if kind == "rewrite" else 400},
        )
        for q in queries
        if q.history
    ]


def rewriter_identity(kind: str, options: RewriterOptions) -> dict[str, str]:
    """What decides a model-backed history's texts (recorded in results, compared to skip finished ones):
    kind, model, endpoint without credentials, prompt hash, and the temperature when it is not 0 (results written
    before it was recorded were all made at 0)."""
    judge = options.judge
    base = judge.base_url if is_hf_url(judge.base_url) else display_url(resolve_base_url(judge))
    identity = {"kind": kind, "model": judge.model, "base_url": base, "prompt_hash": prompt_hash(kind)}
    if judge.temperature:
        identity["temperature"] = judge.temperature
    return identity


def history_stage(kind: str, queries: Sequence[ConversationalQuery], judge: JudgeConfig) -> Stage:
    """The rewriter's stage: one request per query with history, keyed by query id."""
    items = [StageItem(request.key, request) for request in history_requests(kind, queries)]
    return Stage(
        kind,
        judge,
        items,
        desc=f"{kind} ({judge.model})",
        kind="rewriter",
        unit="requests",
        completion_tokens_per_request={"rewrite": 60, "summary": 150}.get(kind, MAX_TOKENS.get(kind, 150) // 2),
    )


def compute_model_history(
    kind: str, queries: Sequence[ConversationalQuery], options: RewriterOptions, client: ChatRunner | None = None
) -> tuple[dict[str, str] | None, ModelHistoryReport]:
    """(qid -> text for every query that got one, report); texts is None on a dry run.

    ``client``: one made already (tests, a shared generator); else made from ``options.judge``. The stage runs
    without a log: the response cache holds the replies, so a re-run sends only the requests that failed.
    """
    judge = options.judge
    report = ModelHistoryReport(**rewriter_identity(kind, options), queries=len(queries))
    texts = {q.qid: (q.query if kind == "rewrite" else "") for q in queries if not q.history}
    if kind in EXPANSION_KINDS:  # a first turn's passages are asked for too
        texts = {}
    report.without_history = len(texts)
    stage = history_stage(kind, queries, judge)
    report.requested = len(stage.items)
    stage_options = StageOptions(options.cache, options.dry_run, options.yes, options.show_progress)
    if options.dry_run:
        run_stage(stage, None, stage_options)
        return None, report
    if not stage.items:
        return texts, report
    outcome, _ = run_stage(stage, None, stage_options, client=client)
    for item in stage.items:  # in request order
        _count_reply(report, texts, outcome.records[item.key])
    usage = outcome.usage
    report.cached, report.http_requests = usage.cached, usage.requests
    report.prompt_tokens, report.completion_tokens = usage.prompt_tokens, usage.completion_tokens
    report.cost_usd = usage.cost_usd(judge)
    return texts, report


def _count_reply(report: ModelHistoryReport, texts: dict[str, str], record: StageRecord) -> None:
    """A query's text, or its failure counted; a failed request or a malformed reply kept for the reply log."""
    if not record.ok or record.malformed:
        report.replies.append(
            {
                "qid": record.key,
                "ok": record.ok,
                "error": record.error,
                "attempts": record.attempts,
                "malformed": [dict(m) for m in record.malformed],
            }
        )
    if record.ok:
        texts[record.key] = str(record.value)
        return
    report.failures += 1
    reason = record.error or "unknown"
    report.failure_reasons[reason] = report.failure_reasons.get(reason, 0) + 1
    if len(report.failed_qids) < MAX_FAILED_SHOWN:
        report.failed_qids.append(record.key)
