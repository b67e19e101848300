"""``mtrbench generate``: for each turn, a prompt with the chosen compression of the history and the top-k
passages (of a retrieval run, or the gold ones), an answer citing ``[n]``, one JSONL record per turn.

Record contract (the judge reads it; extra fields may be added, these never change)::

    {"qid", "conversation_id", "turn", "question", "answer", "passages": [doc ids], "generator",
     "history": "full|last-response|rewrite|rewrite:llm|summary:llm", "source": "run|oracle"}

``history`` is the ``--history`` name, as in ``mtrbench eval``; files written before by its old names ("raw",
"summary") are read as those (``formats.generations.LEGACY_HISTORIES``) and resumed.

Citation ``[n]`` in ``answer`` refers to ``passages[n-1]``.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.data import load_task
from mtrbench.data.model import ConversationalQuery, TaskData, first_conversations
from mtrbench.formats.generations import LEGACY_HISTORIES, current_history
from mtrbench.formats.mtrag_eval import MAX_CONTEXTS
from mtrbench.formats.run import Run
from mtrbench.generation.defaults import DEFAULT_HISTORY, DEFAULT_TOP_K, GENERATION_HISTORIES
from mtrbench.generation.model_history import RewriterOptions, compute_model_history
from mtrbench.generation.mtrag_output import write_mtrag_predictions
from mtrbench.generation.prompts import answer_messages, answer_prompt_hash, dialogue
from mtrbench.generation.settings import GenerationSettings, ModelSettings, unrecorded_note
from mtrbench.generation.sources import has_reference_passages, load_run, oracle_passages, run_passages
from mtrbench.generation.store import AnswerSink, GenerationStore
from mtrbench.infra.atomic import check_file_target
from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.failure_rate import JudgeFailures, most_common
from mtrbench.llm.hf import make_client
from mtrbench.llm.preflight import check_endpoint
from mtrbench.llm.stage import Stage, StageItem, StageOptions, run_stage
from mtrbench.llm.types import ChatRequest, ChatRunner
from mtrbench.results.writer import safe_name
from mtrbench.serialize.history import HistoryStrategy, get_strategy

log = logging.getLogger(__name__)
ANSWER_STAGE = "generate"  # the answer stage's name (the runner's messages)


@dataclass
class GenerateConfig:
    task: str
    run_path: Path | None = None  # TREC run, eval result JSON or its folder; None with oracle
    oracle: bool = False
    top_k: int = DEFAULT_TOP_K
    history: str = DEFAULT_HISTORY  # one of GENERATION_HISTORIES (an old name is read as its current one)
    output: Path | None = None  # default: generations.jsonl beside the run
    split: str | None = None
    data_dir: str | None = None
    corpus_path: str | None = None
    max_passage_chars: int | None = None  # cut each passage shown to the generator; None: whole
    limit: int | None = None  # the first N conversations in file order (smoke runs), as eval's --limit
    dry_run: bool = False
    yes: bool = False
    show_progress: bool = True
    rewriter: RewriterOptions | None = None  # for rewrite:llm / summary
    mtrag_output: Path | None = None  # also write the answers as an MTRAGEval prediction file (Task B/C)


@dataclass
class GenerateReport:
    output: Path
    turns: int = 0  # turns planned
    done_before: int = 0  # already in the file
    generated: int = 0
    failed: int = 0
    skipped: Counter = field(default_factory=Counter)  # reason -> turns not generated at all
    torn_lines: int = 0
    duplicates: int = 0
    requests: int = 0  # HTTP requests sent (or generate calls)
    cached: int = 0
    rewriter: dict[str, Any] | None = None
    failures_path: Path | None = None
    failure_reasons: Counter = field(default_factory=Counter)  # reason -> turns failed with it (this run)
    settings: GenerationSettings | None = None
    other_settings: str | None = None  # how the default file's answers differ, when a new file was started
    mtrag_output: Path | None = None  # the MTRAGEval prediction file written
    mtrag_predictions: int = 0  # turns in it

    @property
    def asked(self) -> int:
        """Turns this run tried to generate (rewriter failures included)."""
        return self.generated + self.failed


def generation_failures(report: GenerateReport, generator: str) -> JudgeFailures:
    """This run's failed/asked turns and the most common reason, for ``--max-failure-rate``."""
    return JudgeFailures(
        generator, report.failed, report.asked, most_common(report.failure_reasons), kind="generator", unit="turns"
    )


def generation_history(name: str) -> str:
    """The current ``--history`` name for generation; an old one ("raw", "summary") is read as its new one."""
    history = current_history(name.strip())
    if history not in GENERATION_HISTORIES:
        raise UserInputError(f"--history must be one of {', '.join(GENERATION_HISTORIES)} for generation, got '{name}'")
    return history


def generation_strategy(name: str) -> HistoryStrategy:
    """Eval's history strategy for a generation ``--history`` name (old names read as their current ones)."""
    return get_strategy(generation_history(name))


def history_source(strategy: HistoryStrategy, rewriter: RewriterOptions | None) -> str:
    """Where the text the generator sees comes from, as recorded: the task's turns, its gold rewrite, or
    ``llm:<rewriter model>``."""
    if strategy.needs_rewriter:
        if rewriter is None:
            raise UserInputError(f"--history {strategy.name} needs a rewriter model (--rewriter-model)")
        return f"llm:{rewriter.judge.model}"
    return "gold" if strategy.needs_gold_rewrite else "task"


def default_output(config: GenerateConfig, run_file: Path | None, task_name: str, generator: str) -> Path:
    """Beside the run, named by run, generator and history, so two generators (or two histories) on one
    retrieval result never share a file: ``<task>.<generator>.<history>.generations.jsonl``. Where only a file
    named by the history's old name exists (``...raw.generations.jsonl``), that one, to resume it."""
    if config.output is not None:
        return Path(config.output)
    paths = _default_paths(config, run_file, task_name, generator)
    if not paths[0].is_file():
        return next((path for path in paths[1:] if path.is_file()), paths[0])
    return paths[0]


def _default_paths(config: GenerateConfig, run_file: Path | None, task_name: str, generator: str) -> list[Path]:
    """The default file by the history's current name, then by its old names."""
    history = generation_history(config.history)
    names = [history, *(old for old, new in LEGACY_HISTORIES.items() if new == history)]
    if run_file is not None:
        stem = run_file.name
        for suffix in (".run.trec", ".trec", ".run", ".txt"):
            if stem.endswith(suffix):
                stem = stem[: -len(suffix)]
                break
        folder, prefix = run_file.parent, f"{stem}."
    else:
        folder, prefix = Path("results") / "generations" / safe_name(task_name) / "oracle", ""
    return [folder / f"{prefix}{safe_name(generator)}.{safe_name(name)}.generations.jsonl" for name in names]


def settings_path(default: Path, settings: GenerationSettings) -> Path:
    """Where answers made with other settings than the default file's go: ``<stem>.<digest>.generations.jsonl``."""
    suffix = ".generations.jsonl"
    stem = default.name[: -len(suffix)] if default.name.endswith(suffix) else default.stem
    return default.with_name(f"{stem}.{settings.digest()}{suffix}")


def _open_store(
    config: GenerateConfig, output: Path, current_name: Path, settings: GenerationSettings, report: GenerateReport
) -> GenerationStore:
    """The store to resume: the default file when its answers were made with these settings; else (a ``note:``)
    the file named by the settings' digest. A file named with --output is used as given (other settings there
    are an error in ``read``)."""
    store = GenerationStore(output)
    if config.output is not None:
        return store
    differs = store.other_settings(settings.compared())
    if differs is None:
        return store
    alternative = settings_path(current_name, settings)
    report.other_settings = differs
    log.warning(
        f"note: {output} holds answers made with other settings ({differs}); these settings' answers go to "
        f"{alternative}"
    )
    return GenerationStore(alternative)


def _passage_text(task: TaskData, doc_id: str, max_chars: int | None) -> str:
    text = task.corpus.document_text(task.corpus.position(doc_id), title_separator="\n")
    return text[:max_chars] if max_chars else text


def parse_answer(reply: str) -> str:
    """A malformed answer (empty) raises, so the client asks again and then records a failure."""
    text = (reply or "").strip()
    if not text:
        raise ValueError("empty answer")
    return text


def _history_text(strategy: HistoryStrategy, query: ConversationalQuery) -> str:
    """The dialogue the generator sees for a history taken from the task's turns; else empty."""
    if strategy.needs_rewriter or strategy.needs_gold_rewrite:
        return ""
    return dialogue(strategy.select(query)[0])


@dataclass
class _Inputs:
    """What a generate run works on, once checked and loaded."""

    strategy: HistoryStrategy
    task: TaskData
    run_file: Path | None
    run: Run | None
    settings: GenerationSettings


@dataclass
class _Turn:
    """A turn still to generate: its query and the documents shown for it."""

    query: ConversationalQuery
    doc_ids: list[str]


def run_generate(
    config: GenerateConfig,
    generator: JudgeConfig,
    cache: ResponseCache | None = None,
    client: ChatRunner | None = None,
    rewriter_client: ChatRunner | None = None,
) -> GenerateReport:
    """Generate the turns not yet in the output file. ``client``/``rewriter_client``: clients made already
    (tests); else made from the judge configurations."""
    inputs = _load_inputs(config, generator)
    output = default_output(config, inputs.run_file, inputs.task.name, generator.model)
    report = GenerateReport(output=output, settings=inputs.settings)
    default_name = _default_paths(config, inputs.run_file, inputs.task.name, generator.model)[0]
    store = _open_store(config, output, default_name, inputs.settings, report)
    report.output, report.failures_path = store.path, store.failures_path
    for path in (store.path, config.mtrag_output):  # a folder or a file in the way: one line before any request
        if path is not None:
            check_file_target(path)
    if config.limit is not None and config.limit < 1:
        raise UserInputError(f"--limit must be a positive number of conversations, got {config.limit}")
    queries = first_conversations(inputs.task, config.limit).queries if config.limit else inputs.task.queries
    if inputs.run is not None:
        unknown = [qid for qid in inputs.run if qid not in {q.qid for q in inputs.task.queries}]
        if unknown:
            report.skipped["run queries not in the task"] = len(unknown)
    with store.hold():
        turns = _plan_turns(config, inputs, queries, store, report)
        clients = _Clients(client, rewriter_client)
        if _same_model(config.rewriter, generator) and not config.dry_run and clients.none_made and turns:
            clients = _Clients.shared(make_client(generator, cache))  # one model loaded, one connection
        failures: list[dict[str, Any]] = []
        texts: dict[str, str] = {}
        if inputs.strategy.needs_rewriter:
            written = _model_history(config, inputs.strategy, turns, clients.rewriter, report, failures)
            if written is None:
                return report  # dry run
            texts, turns = written
        stage = _answer_stage(generator, inputs.settings, _answer_items(config, inputs, turns, texts, report))
        options = StageOptions(cache, config.dry_run, config.yes, config.show_progress)
        if config.dry_run:
            run_stage(stage, None, options)
            return report
        _answer(stage, options, clients, store, failures, report)
    if config.mtrag_output is not None:
        report.mtrag_output = Path(config.mtrag_output)
        report.mtrag_predictions = write_mtrag_predictions(
            report.mtrag_output,
            queries,
            store.read(inputs.settings.compared()).done,
            inputs.task,
            inputs.run,
            config.oracle,
        )
    return report


def _check_config(config: GenerateConfig) -> None:
    if config.oracle == (config.run_path is not None):
        raise UserInputError("give a retrieval result (--run) or --oracle, exactly one")
    if config.top_k < 1:
        raise UserInputError(f"--top-k must be at least 1, got {config.top_k}")
    if config.mtrag_output is not None and Path(config.mtrag_output).suffix != ".jsonl":
        raise UserInputError(
            f"--mtrag-out {config.mtrag_output}: MTRAGEval prediction files are JSON Lines named *.jsonl"
        )
    if config.mtrag_output is not None and config.top_k > MAX_CONTEXTS:
        raise UserInputError(
            f"--mtrag-out: MTRAGEval allows at most {MAX_CONTEXTS} contexts per task; show at most "
            f"{MAX_CONTEXTS} passages, got {config.top_k}"
        )


def _load_inputs(config: GenerateConfig, generator: JudgeConfig) -> _Inputs:
    """The checked configuration's strategy, task, run and settings; errors before anything is asked."""
    strategy = generation_strategy(config.history)
    _check_config(config)
    source_of_history = history_source(strategy, config.rewriter)
    if config.dry_run:  # an unusable endpoint is reported before the prompts, not after the run
        check_endpoint(generator, "generator")
        if config.rewriter is not None and strategy.needs_rewriter:
            check_endpoint(config.rewriter.judge, "rewriter")
    run_file, run = load_run(config.run_path) if config.run_path is not None else (None, None)
    task = load_task(config.task, split=config.split, data_dir=config.data_dir, corpus_path=config.corpus_path)
    if strategy.needs_gold_rewrite and not task.has_rewrites:
        raise UserInputError(
            f"--history rewrite uses the task's gold rewrites and task '{task.name}' has none; "
            "use --history rewrite:llm for a model's rewrites"
        )
    model = ModelSettings.of(generator)
    settings = GenerationSettings(
        generator=model.model,
        endpoint=model.endpoint,
        max_tokens=model.max_tokens,
        temperature=model.temperature,
        seed=model.seed,
        prompt_hash=answer_prompt_hash(strategy.name),
        top_k=config.top_k,
        max_passage_chars=config.max_passage_chars,
        history=strategy.name,
        history_source=source_of_history,
        source="oracle" if config.oracle else "run",
    )
    return _Inputs(strategy, task, run_file, run, settings)


def _plan_turns(
    config: GenerateConfig,
    inputs: _Inputs,
    queries: list[ConversationalQuery],
    store: GenerationStore,
    report: GenerateReport,
) -> list[_Turn]:
    """The turns not in the store yet that can be asked, with their documents; the others counted."""
    stored = store.read(inputs.settings.compared())
    report.torn_lines, report.duplicates = stored.unreadable_lines, stored.duplicates
    if stored.unrecorded:
        log.warning(unrecorded_note(store.path, max(stored.unrecorded.values()), list(stored.unrecorded)))
    task, run = inputs.task, inputs.run
    turns: list[_Turn] = []
    for q in queries:
        if q.qid in stored.done:
            report.done_before += 1
            continue
        doc_ids = oracle_passages(q, config.top_k) if run is None else run_passages(run, q.qid, config.top_k)
        if doc_ids is None:
            report.skipped["turns absent from the run"] += 1
            continue
        if config.oracle and not doc_ids and not has_reference_passages(q):
            report.skipped["turns without gold passages (oracle)"] += 1
            continue
        missing = [d for d in doc_ids if d not in task.corpus]
        if missing:
            where = inputs.run_file if inputs.run_file is not None else f"task {task.name} qrels"
            raise DataError(
                f"{where}: query '{q.qid}' lists document '{missing[0]}', which is not in the "
                f"corpus of task {task.name}"
            )
        turns.append(_Turn(q, doc_ids))
    report.turns = report.done_before + len(turns)
    return turns


@dataclass
class _Clients:
    """The clients made already (tests, or one shared when the rewriter is the generator); None: made later."""

    generator: ChatRunner | None
    rewriter: ChatRunner | None

    @classmethod
    def shared(cls, client: ChatRunner) -> _Clients:
        return cls(client, client)

    @property
    def none_made(self) -> bool:
        return self.generator is None and self.rewriter is None


def _same_model(rewriter: RewriterOptions | None, generator: JudgeConfig) -> bool:
    return rewriter is not None and (rewriter.judge.model, rewriter.judge.base_url) == (
        generator.model,
        generator.base_url,
    )


def _model_history(
    config: GenerateConfig,
    strategy: HistoryStrategy,
    turns: list[_Turn],
    client: ChatRunner | None,
    report: GenerateReport,
    failures: list[dict[str, Any]],
) -> tuple[dict[str, str], list[_Turn]] | None:
    """The rewriter's texts for the turns still to generate, and the turns that got one (the others recorded as
    failed); None on a dry run."""
    rewriter = config.rewriter
    assert rewriter is not None and strategy.model_kind is not None  # history_source checked it
    texts, model_report = compute_model_history(strategy.model_kind, [t.query for t in turns], rewriter, client)
    report.rewriter = model_report.as_dict()
    if texts is None:
        return None
    replies = {r["qid"]: r for r in model_report.replies}
    for turn in turns:
        if turn.query.qid not in texts:
            reply = replies.get(turn.query.qid, {})
            failures.append(
                {
                    "qid": turn.query.qid,
                    "error": f"{strategy.name} by {rewriter.judge.model} failed "
                    f"after retries: {reply.get('error') or 'unknown'}",
                    "stage": strategy.name,
                    "malformed": reply.get("malformed", []),
                }
            )
    report.failure_reasons.update(
        {f"{strategy.name}: {reason}": n for reason, n in model_report.failure_reasons.items()}
    )
    return texts, [t for t in turns if t.query.qid in texts]


def _answer_items(
    config: GenerateConfig, inputs: _Inputs, turns: list[_Turn], texts: dict[str, str], report: GenerateReport
) -> list[StageItem]:
    """Each turn's answer request, with its generations record (the answer left empty) as the item's fields."""
    strategy, model_kind = inputs.strategy, inputs.strategy.model_kind
    items = []
    for turn in turns:
        q = turn.query
        question = q.query
        history_text = _history_text(strategy, q)
        if model_kind == "rewrite":
            question = texts[q.qid]
        elif model_kind == "summary":
            history_text = texts[q.qid]
        elif strategy.needs_gold_rewrite:
            if q.gold_rewrite:
                question = q.gold_rewrite
            else:
                report.skipped["turns without a gold rewrite asked with the raw question (not skipped)"] += 1
        passages = [_passage_text(inputs.task, d, config.max_passage_chars) for d in turn.doc_ids]
        messages = answer_messages(strategy.name, question, passages, history_text)
        record = {
            "qid": q.qid,
            "conversation_id": q.conversation_id,
            "turn": q.turn_id,
            "question": q.query,
            "answer": None,
            "passages": turn.doc_ids,
            **({"rewrite": question} if model_kind == "rewrite" or strategy.needs_gold_rewrite else {}),
            **({"summary": history_text} if model_kind == "summary" else {}),
            **inputs.settings.record(),
        }
        items.append(StageItem(q.qid, ChatRequest(key=q.qid, messages=messages, parse=parse_answer), fields=record))
    return items


def _answer_stage(generator: JudgeConfig, settings: GenerationSettings, items: list[StageItem]) -> Stage:
    return Stage(
        ANSWER_STAGE,
        generator,
        items,
        settings.compared(),
        desc=f"generate ({generator.model})",
        kind="generator",
        unit="turns",
    )


def _answer(
    stage: Stage,
    options: StageOptions,
    clients: _Clients,
    store: GenerationStore,
    failures: list[dict[str, Any]],
    report: GenerateReport,
) -> None:
    """The answer stage, without a stage log: the store (read above) holds the finished turns, and each answer is
    appended to it as it comes; the failed turns (the rewriter's first) go to the failures file, even when the run
    stops."""
    sink = AnswerSink(store, [stage.judge])
    try:
        if stage.items:
            with store:
                outcome, _ = run_stage(stage, None, options, client=clients.generator, on_record=sink)
            shared = clients.generator is not None and clients.rewriter is clients.generator
            rewriter_usage = (report.rewriter or {}) if shared else {}  # one client: its usage counts both
            report.requests = outcome.usage.requests + rewriter_usage.get("http_requests", 0)
            report.cached = outcome.usage.cached + rewriter_usage.get("cached", 0)
    finally:
        for record in sink.failed:
            failures.append(
                {
                    "qid": record.key,
                    "error": record.error,
                    "attempts": record.attempts,
                    "stage": "answer",
                    "malformed": [dict(m) for m in record.malformed],
                }
            )
            report.failure_reasons[record.error or "unknown"] += 1
        report.generated += sink.answered
        report.failed = len(failures)
        store.write_failures(failures)
