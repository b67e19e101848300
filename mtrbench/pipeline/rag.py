"""``mtrbench rag``: retrieval, generation from its top-k, judging and RAGAlign in one pass.

Each stage is the standalone command's own code (``eval``, ``generate``, ``judge run``) and keeps its own
resumability: the retrieval result is rewritten atomically, generations are appended per finished turn and a
rerun asks only for turns not yet in the file, and the judge's reply log answers every turn it already holds.
Everything lands beside the retrieval result: ``<task>.<generator>.<history>.generations.jsonl``, a judge
folder and ``<task>.<generator>.<history>.rag.json``.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtrbench import __version__
from mtrbench.data import load_task, resolve_card
from mtrbench.data.model import TaskData
from mtrbench.formats.generations import LEGACY_HISTORIES, read_generations
from mtrbench.formats.run import read_run
from mtrbench.generation.runner import GenerateConfig, GenerateReport, generation_failures, run_generate
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import MtrbenchError, TooManyFailures
from mtrbench.infra.numeric import json_text
from mtrbench.judge.api import JudgeOptions, JudgeOutcome, judge_generations, ragalign_from_verdicts
from mtrbench.judge.defaults import DEFAULT_RAGALIGN
from mtrbench.judge.nuggets.create import CreationSettings
from mtrbench.judge.nuggets.run import NuggetJudgement, NuggetJudgeOptions, judge_nuggets
from mtrbench.judge.report import scores_payload
from mtrbench.judge.scoring import DEFAULT_MEASURES, GenerationScores, generation_measures, score_generations
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.failure_rate import DEFAULT_MAX_FAILURE_RATE, JudgeFailures, check_share, failure_line, most_common
from mtrbench.llm.preflight import JUDGES_RUN_IN_PROCESS, check_endpoint
from mtrbench.measures import parse_measures
from mtrbench.pipeline.evaluate import EvalConfig, run_eval
from mtrbench.results.result import Result
from mtrbench.results.writer import safe_name
from mtrbench.retrieve import RetrieverOptions
from mtrbench.retrieve.builder import ModelInput


@dataclass
class RagConfig:
    model: ModelInput  # the retriever: a name, a model object (mtrbench.models.protocols) or a ResolvedModel
    task: str
    eval: EvalConfig  # exactly one history strategy
    retriever: RetrieverOptions
    generation: GenerateConfig  # history, top-k, passage cut, limit; task and run are filled in here
    generator: JudgeConfig
    judge: JudgeConfig | None = None  # None: reference measures only
    judge_mode: str = "verdict"  # verdict (correct/incorrect, feeds RAGAlign) | rating (RAD-Bench 1-10)
    scenario: str = "RR"
    measures: tuple[str, ...] = DEFAULT_MEASURES
    ragalign: tuple[str, ...] = DEFAULT_RAGALIGN  # used with judge_mode == "verdict"
    cache: ResponseCache | None = None
    dry_run: bool = False
    yes: bool = False
    show_progress: bool = True
    max_failure_rate: float = DEFAULT_MAX_FAILURE_RATE  # per stage: past it the run stops there and exits 1
    nuggets: bool = False  # also nugget evaluation (judge nuggets) of the answers, by the judge model


@dataclass
class RagReport:
    retrieval: Result
    generation: GenerateReport
    task: TaskData | None = None
    scores: GenerationScores | None = None
    outcome: JudgeOutcome | None = None
    alignment: dict[str, dict[str, Any]] | None = None
    output: Path | None = None  # the rag JSON; None after a dry run
    nuggets: NuggetJudgement | None = None  # with RagConfig.nuggets
    failed_stage: str | None = None  # retrieval | generation | judging | nuggets: the stage past --max-failure-rate
    failure: str | None = None  # its one-line description

    @property
    def complete(self) -> bool:
        """Every planned turn generated and judged; a rerun would ask for nothing."""
        judge_failures = len(self.outcome.failures) if self.outcome is not None else 0
        nugget_failures = sum(f.failed for f in self.nuggets.failures) if self.nuggets is not None else 0
        return self.generation.failed == 0 and judge_failures == 0 and nugget_failures == 0


def rag_stem(retrieval: Result, generator: str, history: str) -> str:
    """``<run stem>.<generator>.<history>``; where only a rag run named by the history's old name exists
    (``...raw...``, before generation took eval's names), that one, so it resumes."""
    run_name = retrieval.run_path.name
    stem = run_name[: -len(".run.trec")] if run_name.endswith(".run.trec") else retrieval.run_path.stem
    names = [history, *(old for old, new in LEGACY_HISTORIES.items() if new == history)]
    stems = [f"{stem}.{safe_name(generator)}.{safe_name(name)}" for name in names]
    folder = retrieval.run_path.parent
    return next(
        (
            s
            for s in stems[1:]
            if not (folder / f"{stems[0]}.generations.jsonl").is_file()
            and (folder / f"{s}.generations.jsonl").is_file()
        ),
        stems[0],
    )


def _check(config: RagConfig) -> None:
    check_share(config.max_failure_rate)
    if len(config.eval.histories) != 1:
        raise MtrbenchError(
            f"rag takes one retrieval history strategy (--history); got {', '.join(map(str, config.eval.histories))}"
        )
    if config.judge_mode not in ("verdict", "rating"):
        raise MtrbenchError(f"--judge must be verdict or rating, got '{config.judge_mode}'")
    if config.judge is None and not config.measures:
        raise MtrbenchError("nothing to score: no reference measures and no judge")
    if config.nuggets and config.judge is None:
        raise MtrbenchError("--nuggets needs the judge model: drop --judge none")
    if config.generation.oracle:
        raise MtrbenchError(
            "rag generates from its own retrieval result; use `mtrbench generate --oracle` for gold passages"
        )
    # measure strings fail here, before anything slow or paid starts
    if config.measures:
        generation_measures(list(config.measures))
    if config.judge is not None and config.judge_mode == "verdict" and config.ragalign:
        wrong = [str(m) for m in parse_measures(list(config.ragalign), [10]) if m.family != "ragalign"]
        if wrong:
            raise MtrbenchError(
                f"--ragalign {', '.join(wrong)}: not a RAGAlign measure (e.g. RAGAlign@10, RAGAlign@10(of=nDCG))"
            )


def run_rag(config: RagConfig, progress: Callable[[str], None] | None = None) -> RagReport | None:
    """Retrieval, generation, judging. A stage failing on more than ``max_failure_rate`` of its items stops the
    run there: what finished is written (generations, judge log, the rag JSON with the stage named) and
    ``TooManyFailures`` names the stage, failed/total and the most common reason. None after a dry run that
    stopped at the rewriter's prompts (retrieval needs its texts)."""
    say = progress or (lambda message: None)
    _check(config)
    check_endpoints(config)  # every stage's model and endpoint, before any work
    say("Stage 1/3: retrieval")
    retrieval = _retrieve(config, say)
    if retrieval is None:  # a dry run of a model-written history: its prompts were shown, nothing retrieved
        return None

    say(f"Stage 2/3: generation ({config.generator.model}, top {config.generation.top_k} passages)")
    generated = _generate(config, retrieval)
    report = RagReport(retrieval=retrieval, generation=generated)
    if config.dry_run:
        return report
    stem = _stem_of(generated.output)
    folder = generated.output.parent
    failure = _generation_failure(config, generated)
    if failure:
        report.failed_stage, report.failure = "generation", failure
        return _stop(config, report, folder / f"{stem}.rag.json")

    say("Stage 3/3: judging")
    failure = _score_and_judge(config, report, folder, stem)
    if failure:  # RAGAlign is not computed from a judge that mostly failed: its failures are the error
        report.failed_stage, report.failure = "judging", failure
        return _stop(config, report, folder / f"{stem}.rag.json")
    failure = _judge_nuggets(config, report, folder, stem) if config.nuggets else None
    if failure:
        report.failed_stage, report.failure = "nuggets", failure
        return _stop(config, report, folder / f"{stem}.rag.json")
    report.output = folder / f"{stem}.rag.json"
    atomic_write_text(
        report.output, json_text(rag_document(config, report), path=report.output, indent=2, ensure_ascii=False) + "\n"
    )
    return report


def _retrieve(config: RagConfig, say: Callable[[str], None]) -> Result | None:
    """Stage 1: the retrieval result of the one history; None after a dry run of a model-written history."""
    try:
        results = run_eval(config.model, config.task, config.eval, config.retriever, progress=say)
    except TooManyFailures as failure:
        raise TooManyFailures(f"rag stopped at the retrieval stage: {failure}") from failure
    return results[0] if results else None


def _generate(config: RagConfig, retrieval: Result) -> GenerateReport:
    """Stage 2: an answer per turn from the retrieval result's top passages."""
    generation_config = dataclasses.replace(
        config.generation,
        task=config.task,
        run_path=retrieval.run_path,
        oracle=False,
        split=config.eval.split,
        data_dir=config.eval.data_dir,
        corpus_path=config.eval.corpus_path,
        dry_run=config.dry_run,
        yes=config.yes,
        show_progress=config.show_progress,
    )
    return run_generate(generation_config, config.generator, config.cache)


def _generation_failure(config: RagConfig, generated: GenerateReport) -> str | None:
    """Why the run stops after generation (too many failures, or no turn generated at all), or None."""
    over = failure_line([generation_failures(generated, config.generator.model)], config.max_failure_rate)
    if over or generated.generated + generated.done_before == 0:
        return over or (
            f"no turn was generated: {generated.failed} of {generated.turns} failed after "
            f"retries{_first_failure(generated)}"
        )
    return None


def _score_and_judge(config: RagConfig, report: RagReport, folder: Path, stem: str) -> str | None:
    """Stage 3: reference measures, the judge and RAGAlign, into ``report``; why the run stops when the judge
    failed on more than the allowed share of the turns, else None."""
    generations = read_generations(report.generation.output)
    card = resolve_card(config.task)
    task = load_task(card, split=config.eval.split, data_dir=config.eval.data_dir, corpus_path=config.eval.corpus_path)
    report.task = task
    measures = generation_measures(list(config.measures)) if config.measures else []
    if measures:
        report.scores = score_generations(generations, task, measures, card.relevance_level)
    if config.judge is None:
        return None
    options = JudgeOptions(
        mode=config.judge_mode,
        scenario=config.scenario,
        output_dir=folder / f"{stem}.judge-{safe_name(config.judge.model)}",
        yes=config.yes,
        show_progress=config.show_progress,
    )
    outcome = judge_generations(generations, task, config.judge, options, cache=config.cache)
    report.outcome = outcome
    assert outcome is not None, "only a dry run judges nothing, and rag's dry run stopped before judging"
    failures = outcome.failures
    judge_failures = JudgeFailures(
        config.judge.model, len(failures), len(outcome.run.turns), most_common([f["error"] for f in failures])
    )
    over = failure_line([judge_failures], config.max_failure_rate)
    if over:
        return over
    if config.judge_mode == "verdict" and config.ragalign:
        # RAGAlign pairs each generated turn's verdict with the retrieval outcome of the same turn
        report.alignment = ragalign_from_verdicts(
            outcome.verdicts or {},
            task,
            read_run(report.retrieval.run_path),
            parse_measures(list(config.ragalign), [10]),
            card.relevance_level,
            qids=list(generations),
        )
    return None


def _judge_nuggets(config: RagConfig, report: RagReport, folder: Path, stem: str) -> str | None:
    """Stage 3b: nugget evaluation of the answers by the judge model (nuggets created from each turn's relevant
    passages), beside the other outputs; why the run stops when a nugget step failed too often, else None."""
    assert config.judge is not None and report.task is not None, "checked, and set by the judging stage"
    options = NuggetJudgeOptions(
        output_dir=folder / f"{stem}.nuggets-{safe_name(config.judge.model)}",
        creation=CreationSettings(relevance_level=resolve_card(config.task).relevance_level),
        max_passage_chars=config.generation.max_passage_chars,
        yes=config.yes,
        show_progress=config.show_progress,
    )
    outcome = judge_nuggets([report.generation.output], report.task, config.judge, options, cache=config.cache)
    assert outcome is not None, "only a dry run judges nothing, and rag's dry run stopped before judging"
    report.nuggets = outcome
    return failure_line(outcome.failures, config.max_failure_rate)


def check_endpoints(config: RagConfig) -> None:
    """Every stage's model and endpoint (rewriter, generator, judge), before retrieval starts: an unusable judge
    fails now, not after the whole generation."""
    rewriter = config.eval.rewriter or config.generation.rewriter
    if rewriter is not None:
        check_endpoint(rewriter.judge, "rewriter")
    check_endpoint(config.generator, "generator")
    if config.judge is not None:
        check_endpoint(config.judge, "judge", in_process=JUDGES_RUN_IN_PROCESS)


def _stem_of(generations: Path) -> str:
    suffix = ".generations.jsonl"
    return generations.name[: -len(suffix)] if generations.name.endswith(suffix) else generations.stem


def _stop(config: RagConfig, report: RagReport, output: Path) -> RagReport:
    """Write what finished (the rag JSON names the failed stage) and raise ``TooManyFailures`` naming it."""
    report.output = output
    atomic_write_text(output, json_text(rag_document(config, report), path=output, indent=2, ensure_ascii=False) + "\n")
    where = (
        f"failed turns listed in {report.generation.failures_path}"
        if report.failed_stage == "generation"
        else f"the judge log in {report.outcome.files['log'].parent}"
        if report.outcome is not None
        else ""
    )
    raise TooManyFailures(
        f"rag stopped at the {report.failed_stage} stage: {report.failure}; {where}; what finished "
        f"is in {output}, a re-run asks only the failed items",
        [report],
    )


def _first_failure(generated: GenerateReport) -> str:
    if generated.failures_path is None:
        return ""
    try:
        with open(generated.failures_path, encoding="utf-8") as handle:
            return f" (first: {json.loads(handle.readline())['error']})"
    except (OSError, ValueError, KeyError):
        return ""


def rag_document(config: RagConfig, report: RagReport) -> dict[str, Any]:
    retrieval = report.retrieval
    assert retrieval.path is not None, "retrieval results are saved before rag reports on them"
    generated = report.generation
    if report.task is not None:
        document = scores_payload(
            report.task, str(generated.output.name), report.scores, report.outcome, report.alignment, None
        )
    else:  # stopped before judging: no task loaded, nothing scored
        document = {"task": config.task, "generations": generated.output.name, "per_turn": {}}
    per_turn = document.pop("per_turn")
    retrieval_per_query = retrieval.per_query_values()
    for qid, row in per_turn.items():
        if qid in retrieval_per_query:
            row["retrieval"] = {retrieval.main_score_key: retrieval_per_query[qid].get(retrieval.main_score_key)}
    document.update(
        {
            "mtrbench_version": __version__,
            "retrieval": {
                "model": retrieval.requested_model,
                "history": retrieval.history,
                "result": retrieval.path.name,
                "run": retrieval.run_path.name,
                "main_score": retrieval.main_score_key,
                "scores": {retrieval.main_score_key: retrieval.scores.get(retrieval.main_score_key)},
                "queries_evaluated": retrieval.n_evaluated,
            },
            "generation": {
                "generator": config.generator.model,
                "history": config.generation.history,
                "top_k": config.generation.top_k,
                "file": generated.output.name,
                "turns": generated.turns,
                "generated_this_run": generated.generated,
                "done_before": generated.done_before,
                "failed": generated.failed,
                "requests_this_run": generated.requests,
                "failure_reasons": dict(generated.failure_reasons),
                "skipped": dict(generated.skipped),
                "settings": generated.settings.record() if generated.settings is not None else None,
            },
            **({"nuggets": nugget_summary(report.nuggets)} if report.nuggets is not None else {}),
            "failed_stage": report.failed_stage,
            "failure": report.failure,
            "command": config.eval.command,
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "complete": report.complete,
            "per_turn": per_turn,
        }
    )
    return document


def nugget_summary(outcome: NuggetJudgement) -> dict[str, Any]:
    """The rag document's ``nuggets`` block: the run's scores and breakdowns, and where the files are."""
    scores = outcome.scores[0]
    return {
        "scores": scores.scores,
        "by_turn": scores.by_turn,
        "by_topic_switch": scores.by_topic_switch,
        "nuggets_file": str(outcome.nuggets_path) if outcome.nuggets_path is not None else None,
        "assignments_file": str(next(iter(outcome.assignment_paths.values()))),
        "log": str(outcome.log_path),
    }
