"""``mtrbench assess TASK --method umbrela``: fill a task's judgment holes with UMBRELA's 0-3 LLM labels, as TREC RAG
2024 filled its pools.

Pool the runs' top-k (``assess.pooling``: pairs the task already judges are left out), ask one judge per pair as
one stage of the LLM stage runner (``mtrbench.llm.stage``: resume from ``umbrela.jsonl``, dry run, cost question,
progress, failure rate), and write

* ``umbrela_qrels.trec``: a plain TREC qrels file, every command reads it: the task's own judgments unchanged,
  then each pair the judge graded (grade 0-3 as UMBRELA gives it);
* ``umbrela_qrels.trec.llm.json`` beside it: which lines are LLM-made (every filled pair and its grade), with the
  judge's model and settings, the prompt version and hash, the scale's meanings, the pool and the counts.

A pair whose reply could not be read (after the client's re-asks) gets no line and is asked again by the next run.
Nothing here prints: the CLI prints the returned result.
"""

from __future__ import annotations

import logging
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from mtrbench.assess.pooling import Pool, PoolPair, build_pool, read_runs
from mtrbench.assess.prompts import build_case
from mtrbench.assess.umbrela_prompt import (
    GRADE_FORMAT,
    GRADE_MEANINGS,
    PROMPT_VERSION,
    parse_grade_reply,
    prompt_hash,
    umbrela_messages,
)
from mtrbench.data import load_task, resolve_card
from mtrbench.data.model import TaskData
from mtrbench.formats.qrels import Qrels, format_qrels
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import UserInputError
from mtrbench.infra.numeric import json_text
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.failure_rate import JudgeFailures
from mtrbench.llm.stage import JSONValue, Stage, StageItem, StageLog, StageOptions, StageOutcome, run_stage
from mtrbench.llm.types import ChatRequest
from mtrbench.results.writer import safe_name

log = logging.getLogger(__name__)

STAGE = "umbrela"
QRELS_NAME = "umbrela_qrels.trec"
SIDECAR_SUFFIX = ".llm.json"
LOG_NAME = "umbrela.jsonl"


@dataclass(frozen=True)
class UmbrelaOptions:
    task: str
    runs: tuple[str, ...]
    depth: int = 10
    output_dir: str | None = None
    query_form: str = "auto"
    split: str | None = None
    data_dir: str | None = None
    corpus: str | None = None
    dry_run: bool = False
    yes: bool = False
    quiet: bool = False


@dataclass(frozen=True)
class UmbrelaPaths:
    folder: Path

    @property
    def qrels(self) -> Path:
        return self.folder / QRELS_NAME

    @property
    def sidecar(self) -> Path:
        return self.folder / (QRELS_NAME + SIDECAR_SUFFIX)

    @property
    def log(self) -> Path:
        return self.folder / LOG_NAME


@dataclass
class UmbrelaResult:
    paths: UmbrelaPaths
    task: str
    split: str
    pool: dict
    filled: dict[tuple[str, str], int]  # (qid, doc id) -> the judge's grade
    failures: JudgeFailures
    asked_now: int  # pairs sent in this run (the rest came from the log)
    usage: dict[str, int | float | None]
    warnings: Counter = field(default_factory=Counter)
    dry_run_message: str | None = None  # set after a dry run: nothing was sent or written

    @property
    def grade_counts(self) -> dict[int, int]:
        counts = Counter(self.filled.values())
        return {grade: counts.get(grade, 0) for grade in GRADE_MEANINGS}


def pair_key(qid: str, doc_id: str) -> str:
    return f"{qid} | {doc_id}"


def umbrela_stage(task: TaskData, pairs: list[PoolPair], judge: JudgeConfig, query_form: str) -> Stage:
    """One item per pooled pair; a logged grade is reused under the same judge model and prompt."""
    queries = {q.qid: q for q in task.queries}
    items = []
    for pair in pairs:
        messages = umbrela_messages(build_case(queries[pair.qid], task.corpus, pair.doc_id, query_form))
        key = pair_key(pair.qid, pair.doc_id)
        request = ChatRequest(key=key, messages=messages, parse=parse_grade_reply, reply_format=GRADE_FORMAT)
        fields: dict[str, JSONValue] = {"qid": pair.qid, "doc_id": pair.doc_id, "best_rank": pair.best_rank}
        items.append(StageItem(key, request, {"prompt_hash": prompt_hash(messages)}, fields))
    return Stage(
        STAGE,
        judge,
        items,
        settings={"model": judge.model, "prompt": PROMPT_VERSION},
        desc=f"UMBRELA {judge.name}",
        unit="pairs",
        completion_tokens_per_request=10,
    )


def run_umbrela(options: UmbrelaOptions, judge: JudgeConfig, cache: ResponseCache | None = None) -> UmbrelaResult:
    """Label the pooled unjudged pairs the log has not graded yet, then write the qrels and their sidecar."""
    if not options.runs:
        raise UserInputError("--method umbrela pools runs: give them with --runs RUN.trec ...")
    card = resolve_card(options.task)
    task = load_task(card, split=options.split, data_dir=options.data_dir, corpus_path=options.corpus)
    pool = build_pool(task, read_runs(list(options.runs)), options.depth)
    folder = Path(options.output_dir) if options.output_dir else Path("results") / "assess" / safe_name(task.name)
    paths = UmbrelaPaths(folder)
    warnings: Counter = Counter(task.warnings) + pool.warnings
    stage = umbrela_stage(task, pool.pairs, judge, options.query_form)
    stage_log = StageLog(paths.log, purpose="UMBRELA log")
    stage_options = StageOptions(cache=cache, dry_run=options.dry_run, yes=options.yes, show_progress=not options.quiet)
    # a real run holds the log until the outputs are written: a second run on the folder stops at once
    with nullcontext() if options.dry_run else stage_log.hold():
        outcome, run = run_stage(stage, stage_log, stage_options)
        filled = _grades(outcome)
        if run.dry_run is not None:
            message = f"{len(outcome.pending)} of {len(stage.items)} pooled unjudged pairs to label (one request each)"
            return UmbrelaResult(
                paths, task.name, task.split, pool.summary(), filled, outcome.failures(), 0, {}, warnings, message
            )
        if run.unreadable_log_lines:
            warnings["log lines cut short by a kill (ignored)"] += run.unreadable_log_lines
        top = max((g for docs in task.qrels().values() for g in docs.values()), default=0)
        if filled and top < max(GRADE_MEANINGS):
            warnings[f"the task's own grades stop at {top}; UMBRELA's filled grades go to 3"] += 1
        result = UmbrelaResult(
            paths, task.name, task.split, pool.summary(), filled, outcome.failures(), outcome.sent,
            outcome.usage_summary(), warnings,
        )  # fmt: skip
        write_outputs(result, task, pool, judge, options)
    return result


def _grades(outcome: StageOutcome) -> dict[tuple[str, str], int]:
    grades = {}
    for item in outcome.stage.items:
        record = outcome.records.get(item.key)
        if record is not None and record.ok and isinstance(record.value, int):
            grades[(str(item.fields["qid"]), str(item.fields["doc_id"]))] = record.value
    return grades


def filled_qrels(original: Qrels, filled: dict[tuple[str, str], int], query_order: list[str]) -> Qrels:
    """The task's judgments first (never overwritten), then the filled pairs in pool order, queries in task order."""
    rank = {qid: n for n, qid in enumerate(query_order)}
    qids = sorted(set(original) | {q for q, _ in filled}, key=lambda q: (rank.get(q, len(rank)), q))
    out: Qrels = {qid: dict(original.get(qid, {})) for qid in qids}
    for (qid, doc_id), grade in filled.items():
        out[qid].setdefault(doc_id, grade)
    return out


def write_outputs(
    result: UmbrelaResult, task: TaskData, pool: Pool, judge: JudgeConfig, options: UmbrelaOptions
) -> None:
    original = task.qrels()
    qrels = filled_qrels(original, result.filled, [q.qid for q in task.queries])
    atomic_write_text(result.paths.qrels, format_qrels(qrels))
    sidecar = {
        "qrels": result.paths.qrels.name,
        "method": "umbrela",
        "task": task.name,
        "split": task.split,
        "scale": {str(grade): meaning for grade, meaning in GRADE_MEANINGS.items()},
        "judge": judge_settings(judge),
        "prompt": {"version": PROMPT_VERSION, "query_form": options.query_form},
        "pool": pool.summary(),
        "counts": {
            "original_judgments": sum(len(docs) for docs in original.values()),
            "llm_labels": len(result.filled),
            "failed": result.failures.failed,
            "by_grade": {str(g): n for g, n in result.grade_counts.items()},
        },
        "llm_labels": [{"qid": q, "doc_id": d, "grade": g} for (q, d), g in result.filled.items()],
        "log": result.paths.log.name,
    }
    atomic_write_text(
        result.paths.sidecar, json_text(sidecar, path=result.paths.sidecar, indent=2, ensure_ascii=False) + "\n"
    )


def judge_settings(judge: JudgeConfig) -> dict[str, object]:
    """What made the labels: the model and its sampling settings (never a key or a credential)."""
    return {
        "name": judge.name,
        "model": judge.model,
        "base_url": judge.base_url,
        "temperature": judge.temperature,
        "max_tokens": judge.max_tokens,
        "parse_retries": judge.parse_retries,
        "extra_body": dict(judge.extra_body),
    }
