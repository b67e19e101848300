"""Library entry points for LLM judging (``mtrbench judge`` and, later, ``mtrbench rag`` call these).

* :func:`judge_generations`: a generations file's turns, against a task's reference answers: RAD-Bench's
  reference-guided 1-10 rating, or a binary correct/incorrect verdict per turn;
* :func:`judge_rad_bench_answers`: model answers in RAD-Bench's own layout, rated per scenario and turn and
  written as RAD-Bench judgment records, aggregated into its Table 2;
* :func:`ragalign_from_verdicts`: RAGAlign@k of those verdicts against the same turns' retrieval.
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench import __version__
from mtrbench.data.loaders.rad_bench import RadBench
from mtrbench.data.model import ASSISTANT, USER, TaskData
from mtrbench.formats.generations import Generation
from mtrbench.formats.run import Run
from mtrbench.generation.settings import (
    RECORD_ONLY,
    ModelSettings,
    describe_differences,
    differences,
    settings_digest,
    unrecorded,
)
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.infra.numeric import json_lines, json_text
from mtrbench.judge.defaults import DEFAULT_MAX_PASSAGE_CHARS
from mtrbench.judge.engine import MODES, JudgeItem, JudgeRun, run_judge
from mtrbench.judge.human import check_label_ids
from mtrbench.judge.prompts import SCENARIOS, TurnToJudge, rating_messages, verdict_messages
from mtrbench.judge.table import Rated, scenario_table, turn_means
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.preflight import JUDGES_RUN_IN_PROCESS, check_endpoint
from mtrbench.measures import Measure, evaluate

log = logging.getLogger(__name__)

SUMMARY_NAME = "summary.json"
VERDICTS_NAME = "verdicts.jsonl"
RATINGS_NAME = "ratings.jsonl"
RAD_JUDGMENTS_NAME = "rad_judgments.jsonl"
SETTINGS_NAME = "settings.json"  # the judge's settings, written before the first request of a folder


@dataclass
class JudgeOptions:
    mode: str = "rating"  # rating (1-10, reference-guided) | verdict (correct/incorrect)
    scenario: str = "RR"  # RAD-Bench prompt family for task turns: RS, RR (uses the passages), TR
    output_dir: Path = Path("results/judge")
    max_passage_chars: int | None = DEFAULT_MAX_PASSAGE_CHARS  # cut each passage shown to the judge
    dry_run: bool = False
    yes: bool = False
    show_progress: bool = True
    human_labels: str | None = None  # --human-labels: its ids are checked against the items before any request

    def check(self) -> None:
        if self.mode not in MODES:
            raise UserInputError(f"judging mode must be one of {', '.join(MODES)}, got '{self.mode}'")
        if self.scenario not in SCENARIOS:
            raise UserInputError(f"scenario must be one of {', '.join(SCENARIOS)}, got '{self.scenario}'")
        if self.max_passage_chars is not None and self.max_passage_chars < 1:
            raise UserInputError("the passage length limit must be positive")


@dataclass
class JudgeOutcome:
    run: JudgeRun
    table: dict[str, dict[str, float]] | None  # rating: generator -> {category: score, "average": ...}
    verdicts: dict[str, int] | None  # verdict: qid -> 1 correct / 0 incorrect (failures absent)
    files: dict[str, Path]
    notes: Counter = field(default_factory=Counter)
    summary: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)  # judge_settings: recorded with every verdict/rating

    @property
    def failures(self) -> list[dict[str, Any]]:
        return [
            {"key": t.item.key, "qid": t.item.qid, "generator": t.item.generator, "turn": t.item.turn, "error": t.error}
            for t in self.run.failures
        ]


def judge_settings(judge: JudgeConfig, options: JudgeOptions) -> dict[str, Any]:
    """What decides a verdict or rating beyond its prompt (each reply's prompt hash is matched by the engine):
    model, endpoint without credentials, max tokens, temperature, seed, mode, scenario and passage cut."""
    model = ModelSettings.of(judge)
    return {
        "model": model.model,
        "endpoint": model.endpoint,
        "max_tokens": model.max_tokens,
        "temperature": model.temperature,
        "seed": model.seed,
        "mode": options.mode,
        "scenario": options.scenario,
        "max_passage_chars": options.max_passage_chars,
    }


def settled_output_dir(output_dir: Path, settings: dict[str, Any]) -> Path:
    """``output_dir`` when its replies were made with these settings (or it holds none yet); else, after a
    ``note:``, the sibling folder named by the settings' digest (``<dir>.<digest>``), as generations do. A folder
    with a judge log but no settings file predates recorded settings: reused with a note, as generations are."""
    compared = {k: v for k, v in settings.items() if k not in RECORD_ONLY}
    settings_file, reply_log = Path(output_dir) / SETTINGS_NAME, Path(output_dir) / "judgments.jsonl"
    if settings_file.is_file():
        try:
            recorded = json.loads(settings_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            recorded = {}
        recorded = recorded if isinstance(recorded, dict) else {}
    elif reply_log.is_file():
        recorded = {}
    else:
        return Path(output_dir)
    differs = differences(recorded, compared)
    if not differs:
        missing = unrecorded(recorded, compared)
        if missing:
            log.warning(
                f"note: the judge replies in {output_dir} predate recorded settings ({', '.join(missing)} not "
                "recorded) and are reused as they are; move the folder away to ask again"
            )
        return Path(output_dir)
    other = Path(output_dir).with_name(f"{Path(output_dir).name}.{settings_digest(compared)}")
    log.warning(
        f"note: {output_dir} holds judge replies made with other settings ({describe_differences(differs)}); "
        f"these settings' replies go to {other}"
    )
    return other


def _prepare(judge: JudgeConfig, options: JudgeOptions) -> tuple[JudgeOptions, dict[str, Any]]:
    """Options with the folder for these settings, and the settings (written there unless a dry run)."""
    from dataclasses import replace

    settings = judge_settings(judge, options)
    if options.dry_run:
        check_endpoint(judge, "judge", in_process=JUDGES_RUN_IN_PROCESS)
    output_dir = settled_output_dir(Path(options.output_dir), settings)
    if not options.dry_run:
        atomic_write_text(
            output_dir / SETTINGS_NAME, json_text(settings, path=output_dir / SETTINGS_NAME, indent=2) + "\n"
        )
    return replace(options, output_dir=output_dir), settings


def _cut(text: str, limit: int | None) -> str:
    return text if limit is None or len(text) <= limit else text[:limit] + " ..."


def _earlier(history) -> tuple[tuple[str, str], ...]:
    """(question, reference answer) pairs of the turns before, from a task query's history."""
    pairs: list[list[str]] = []
    for message in history:
        if message.role == USER:
            pairs.append([message.content, ""])
        elif message.role == ASSISTANT and pairs:
            pairs[-1][1] = message.content
    return tuple((q, a) for q, a in pairs)


def judge_items_for_task(
    generations: Mapping[str, Generation], task: TaskData, options: JudgeOptions, notes: Counter
) -> list[JudgeItem]:
    by_qid = {q.qid: q for q in task.queries}
    items: list[JudgeItem] = []
    for g in generations.values():
        query = by_qid.get(g.qid)
        if query is None:
            notes[f"generations for queries not in {task.name} ({task.split}) (not judged)"] += 1
            continue
        references = [a for a in query.answers if a.strip()]
        if not references:
            notes["turns without a reference answer (not judged: the judge is reference-guided)"] += 1
            continue
        context = []
        for doc_id in g.passages:
            if doc_id in task.corpus:
                i = task.corpus.position(doc_id)
                context.append(_cut(task.corpus.document_text(i, "\n"), options.max_passage_chars))
            else:
                notes["passages not in the corpus (shown as missing)"] += 1
                context.append(f"(document {doc_id} not found)")
        turn = TurnToJudge(
            question=query.query,
            answer=g.answer,
            reference=references[0],
            context=tuple(context),
            earlier=_earlier(query.history),
            turn=query.turn_id,
        )
        messages = rating_messages(options.scenario, turn) if options.mode == "rating" else verdict_messages(turn)
        generator = g.generator or "model"
        items.append(
            JudgeItem(
                key=f"{generator}|{g.qid}",
                qid=g.qid,
                generator=generator,
                scenario=options.scenario,
                category=task.name,
                turn=query.turn_id,
                mode=options.mode,
                messages=messages,
            )
        )
    return items


def judge_generations(
    generations: Mapping[str, Generation],
    task: TaskData,
    judge: JudgeConfig,
    options: JudgeOptions,
    cache: ResponseCache | None = None,
) -> JudgeOutcome | None:
    """Rate or verdict every generated turn that has a reference answer; None after a dry run.

    Writes into ``options.output_dir``: ``judgments.jsonl`` (every reply, appended as it arrives; a re-run
    asks only what it lacks), ``ratings.jsonl`` or ``verdicts.jsonl`` (answered turns only; the verdicts file
    is what ``--generation-judgments`` reads for RAGAlign) and ``summary.json``.
    """
    options.check()
    notes: Counter = Counter()
    items = judge_items_for_task(generations, task, options, notes)
    if not items:
        raise DataError(
            f"no generated turn can be judged against {task.name}: "
            + ("; ".join(f"{n} {what}" for what, n in notes.items()) or "no generations")
        )
    if options.human_labels:
        check_label_ids(options.human_labels, options.mode, items)
    options, settings = _prepare(judge, options)
    run = run_judge(
        items,
        judge,
        options.output_dir,
        cache=cache,
        dry_run=options.dry_run,
        yes=options.yes,
        show_progress=options.show_progress,
    )
    if run is None:
        return None
    return _finish(run, options, notes, {"task": task.name, "split": task.split}, settings=settings)


def judge_items_for_rad_bench(
    bench: RadBench, options: JudgeOptions, models: Sequence[str] | None, notes: Counter
) -> list[JudgeItem]:
    if not bench.questions:
        raise DataError(f"{bench.path}: questions.jsonl is needed to judge answers (turns and contexts)")
    if not bench.model_answers:
        raise DataError(f"{bench.path}: no model answers (model_answer/<model>.jsonl)")
    chosen = list(models) if models else sorted(bench.model_answers)
    unknown = [m for m in chosen if m not in bench.model_answers]
    if unknown:
        raise UserInputError(
            f"{bench.path}: no answers from model '{unknown[0]}' (have: {sorted(bench.model_answers)})"
        )
    items: list[JudgeItem] = []
    for model in chosen:
        for question_id, answer in bench.model_answers[model].items():
            question = bench.questions.get(question_id)
            if question is None:
                notes["answers to questions not in questions.jsonl (not judged)"] += 1
                continue
            reference = bench.reference_answers.get(question_id)
            references = reference.turns if reference else question.references
            for t, text in enumerate(answer.turns, 1):
                if t > len(question.turns):
                    notes["answer turns beyond the question's turns (not judged)"] += 1
                    continue
                needs_reference = question.aspect != "TR" or t >= 3
                if needs_reference and len(references) < t:
                    notes["turns without a reference answer (not judged)"] += 1
                    continue
                earlier = tuple((question.turns[i], references[i] if i < len(references) else "") for i in range(t - 1))
                turn = TurnToJudge(
                    question=question.turns[t - 1],
                    answer=text,
                    reference=references[t - 1] if len(references) >= t else None,
                    context=tuple(_cut(c, options.max_passage_chars) for c in question.contexts[t - 1]),
                    earlier=earlier,
                    turn=t,
                )
                messages = (
                    rating_messages(question.aspect, turn) if options.mode == "rating" else verdict_messages(turn)
                )
                items.append(
                    JudgeItem(
                        key=f"{model}|{question_id}|{t}",
                        qid=f"{question_id}#{t}",
                        generator=model,
                        scenario=question.aspect,
                        category=question.category,
                        turn=t,
                        mode=options.mode,
                        messages=messages,
                    )
                )
    return items


def judge_rad_bench_answers(
    bench: RadBench,
    judge: JudgeConfig,
    options: JudgeOptions,
    models: Sequence[str] | None = None,
    cache: ResponseCache | None = None,
) -> JudgeOutcome | None:
    """Rate RAD-Bench answer files with RAD-Bench's per-scenario, per-turn prompts (rating mode), writing
    ``rad_judgments.jsonl`` in RAD-Bench's judgment layout and the Table 2 aggregation; None after a dry run."""
    options.check()
    if options.mode != "rating":
        raise UserInputError(
            "RAD-Bench answers are judged with ratings (RAD-Bench's protocol); verdicts are for generations of a task"
        )
    notes: Counter = Counter()
    items = judge_items_for_rad_bench(bench, options, models, notes)
    if not items:
        raise DataError(f"{bench.path}: no answer turn can be judged")
    if options.human_labels:
        check_label_ids(options.human_labels, options.mode, items)
    options, settings = _prepare(judge, options)
    run = run_judge(
        items,
        judge,
        options.output_dir,
        cache=cache,
        dry_run=options.dry_run,
        yes=options.yes,
        show_progress=options.show_progress,
    )
    if run is None:
        return None
    return _finish(run, options, notes, {"rad_bench": str(bench.path)}, rad_layout=True, settings=settings)


def _finish(
    run: JudgeRun,
    options: JudgeOptions,
    notes: Counter,
    about: dict[str, Any],
    rad_layout: bool = False,
    settings: dict[str, Any] | None = None,
) -> JudgeOutcome:
    out_dir = Path(options.output_dir)
    files: dict[str, Path] = {"log": run.log_path}
    table = verdicts = None
    if run.mode == "rating":
        table = _write_ratings(run, out_dir, files, settings, rad_layout)
    else:
        verdicts = _write_verdicts(run, out_dir, files, settings)
    if run.unreadable_log_lines:
        notes["log lines cut short by an interrupted run (ignored)"] += run.unreadable_log_lines
    outcome = JudgeOutcome(
        run=run, table=table, verdicts=verdicts, files=files, notes=notes, settings=dict(settings or {})
    )
    outcome.summary = _summary(outcome, about, settings)
    files["summary"] = out_dir / SUMMARY_NAME
    outcome.summary["files"]["summary"] = SUMMARY_NAME
    atomic_write_text(
        files["summary"], json_text(outcome.summary, path=files["summary"], indent=2, ensure_ascii=False) + "\n"
    )
    return outcome


def _rated(run: JudgeRun) -> list[Rated]:
    return [Rated(t.item.generator, t.item.category, t.item.turn, float(t.value)) for t in run.answered]


def _write_ratings(
    run: JudgeRun, out_dir: Path, files: dict[str, Path], settings: dict[str, Any] | None, rad_layout: bool
) -> dict[str, dict[str, float]]:
    """The ratings file (and, for RAD-Bench answers, its judgment records) added to ``files``; the scenario table."""
    answered = run.answered
    rows = _rated(run)
    table = scenario_table(rows) if rows else {}
    lines = [
        {
            "qid": t.item.qid,
            "generator": t.item.generator,
            "scenario": t.item.scenario,
            "category": t.item.category,
            "turn": t.item.turn,
            "rating": t.value,
            "prompt_hash": t.item.prompt_hash,
            "settings": settings,
        }
        for t in answered
    ]
    files["ratings"] = out_dir / RATINGS_NAME
    _write_jsonl(files["ratings"], lines)
    if rad_layout:
        files["rad_judgments"] = out_dir / RAD_JUDGMENTS_NAME
        _write_jsonl(
            files["rad_judgments"],
            [
                {
                    "question_id": t.item.qid.rsplit("#", 1)[0],
                    "turn": t.item.turn,
                    "type": t.item.scenario,
                    "score": t.value,
                    "model": t.item.generator,
                    "judge": [run.judge.model, f"{t.item.scenario}-{t.item.turn}-turn"],
                    "judgment": t.reply or "",
                }
                for t in answered
            ],
        )
    return table


def _write_verdicts(
    run: JudgeRun, out_dir: Path, files: dict[str, Path], settings: dict[str, Any] | None
) -> dict[str, int]:
    """The verdicts file added to ``files``; qid -> 1 correct / 0 incorrect."""
    files["verdicts"] = out_dir / VERDICTS_NAME
    _write_jsonl(
        files["verdicts"],
        [
            {
                "qid": t.item.qid,
                "label": int(t.value),
                "generator": t.item.generator,
                "judge": run.judge.name,
                "prompt_hash": t.item.prompt_hash,
                "settings": settings,
            }
            for t in run.answered
        ],
    )
    return {t.item.qid: int(t.value) for t in run.answered}


def _summary(outcome: JudgeOutcome, about: dict[str, Any], settings: dict[str, Any] | None) -> dict[str, Any]:
    """summary.json: the judge, counts, failures and notes, and the table or accuracy of the answered turns."""
    run, answered = outcome.run, outcome.run.answered
    summary: dict[str, Any] = {
        "mtrbench_version": __version__,
        **about,
        "mode": run.mode,
        "judge": {"name": run.judge.name, "model": run.judge.model, "base_url": run.judge.base_url},
        "settings": settings,
        "counts": {
            "turns": len(run.turns),
            "answered": len(answered),
            "failures": len(run.failures),
            "asked_this_run": run.sent,
        },
        "failures": outcome.failures,
        "notes": dict(outcome.notes),
        "usage_this_run": run.usage,
        "files": {k: p.name for k, p in outcome.files.items()},
    }
    if outcome.table is not None:
        summary["table"] = outcome.table
        summary["turn_means"] = {
            m: {c: {str(k): v for k, v in ts.items()} for c, ts in cs.items()}
            for m, cs in turn_means(_rated(run)).items()
        }
        summary["mean_rating"] = (sum(float(t.value) for t in answered) / len(answered)) if answered else None
    if outcome.verdicts is not None:
        verdicts = outcome.verdicts
        summary["accuracy"] = (sum(verdicts.values()) / len(verdicts)) if verdicts else None
    return summary


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    atomic_write_text(path, json_lines(rows, path=path, ensure_ascii=False))


def run_from_generations(generations: Mapping[str, Generation]) -> Run:
    """The passages shown to the generator, in order, as a ranked run (first = best)."""
    run: Run = {}
    for g in generations.values():
        docs: dict[str, float] = {}
        for rank, doc_id in enumerate(g.passages):
            docs.setdefault(doc_id, float(len(g.passages) - rank))
        run[g.qid] = docs
    return run


def ragalign_from_verdicts(
    verdicts: Mapping[str, int],
    task: TaskData,
    run: Run,
    measures: Sequence[Measure],
    relevance_level: int = 1,
    qids: Collection[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """RAGAlign measures (``RAGAlign@10``, ``RAGAlign@10(of=nDCG)``) of binary verdicts against ``run`` on the
    task's qrels, over ``qids`` (e.g. the generated turns; default every judged query of the task):
    result key -> {"metric", "value", "n", "p_value", "missing_generation"}. A correlation that is undefined
    (retrieval or verdicts constant) has value None and a "note", never NaN."""
    wrong = [str(m) for m in measures if m.family != "ragalign"]
    if wrong:
        raise UserInputError(f"{', '.join(wrong)}: not a RAGAlign measure")
    qrels = task.qrels()
    if qids is not None:
        qrels = {q: docs for q, docs in qrels.items() if q in set(qids)}
    evaluation = evaluate(qrels, run, measures, relevance_level, generation=dict(verdicts))
    out: dict[str, dict[str, Any]] = {}
    for key in evaluation.aggregates:
        result = dict(evaluation.details[key])
        if result["value"] is not None and math.isnan(result["value"]):
            result.update(
                value=None,
                p_value=None,
                note="undefined: the retrieval values or the verdicts are constant over these turns",
            )
        out[key] = result
    return out
