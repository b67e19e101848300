"""`mtrbench simulate run|score|validate`: the flags become typed options here; the work is in mtrbench.simulate."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from dataclasses import asdict
from pathlib import Path

from mtrbench.cli.llm_flags import cache_from_args, model_judge, sampling_overrides
from mtrbench.data import load_task, resolve_card
from mtrbench.data.model import TaskData
from mtrbench.infra.atomic import atomic_write_text, check_folder_target
from mtrbench.infra.errors import UserInputError
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.failure_rate import JudgeFailures, check_share, raise_if_over
from mtrbench.llm.hf import make_client
from mtrbench.serialize.history import get_strategy
from mtrbench.simulate.needs import needs_from_task, read_personas, with_personas
from mtrbench.simulate.profiles import parse_profile
from mtrbench.simulate.session import SessionOptions, dry_run_sessions, run_sessions
from mtrbench.simulate.systems import HttpSystem, System
from mtrbench.simulate.transcripts import write_transcripts

RESUME = "transcripts and logs are written; a re-run asks only what failed or is missing"


def _cmd_simulate(args: argparse.Namespace) -> int:
    if args.simulate_action == "run":
        return _run(args)
    if args.simulate_action == "score":
        return _score(args)
    if args.simulate_action == "validate":
        return _validate(args)
    args.simulate_parser.print_help()
    return 0


def _task(args: argparse.Namespace) -> TaskData:
    return load_task(resolve_card(args.task), split=args.split, data_dir=args.data_dir, corpus_path=args.corpus)


def _user_judge(args: argparse.Namespace) -> JudgeConfig:
    judge = model_judge(args.user_model, args.user_base_url, args, "user")
    return sampling_overrides(dataclasses.replace(judge, max_tokens=args.max_tokens), args.temperature, args.seed)


def _run(args: argparse.Namespace) -> int:
    profile = parse_profile(args.profile, args.max_turns)
    check_share(args.max_failure_rate)
    check_folder_target(args.output_dir)
    personas = read_personas(args.personas) if args.personas else None
    judge = _user_judge(args)
    task = _task(args)
    needs = needs_from_task(task, args.limit)
    if personas is not None:
        needs = with_personas(needs, personas)
    folder = Path(args.output_dir)
    if args.dry_run:  # the user's first prompts; no system is built or asked
        dry_run_sessions(needs, judge, SessionOptions(folder, profile, args.seed))
        return 0
    cache = cache_from_args(args)
    system = HttpSystem(args.system_url, args.system_timeout) if args.system_url else _system(args, task, cache)
    options = SessionOptions(folder, profile, args.seed, cache, args.yes, not args.quiet)
    run = run_sessions(needs, system, judge, options)
    summary = {
        "task": task.name,
        "profile": profile.settings(),
        "user": {"model": judge.model, "temperature": judge.temperature, "seed": args.seed},
        "system": system.settings(),
        "sessions": len(run.sessions),
    }
    write_transcripts(folder, run.sessions, profile, task.corpus, task.split, summary)
    statuses = [s.status for s in run.sessions]
    counts = ", ".join(f"{n} {status}" for status in ("satisfied", "abandoned", "user_failed")
                       if (n := statuses.count(status)))  # fmt: skip
    print(f"{len(run.sessions)} sessions ({counts}); {run.system_failures.total} system turns, "
          f"{run.system_failures.failed} failed; {run.user_requests} user and {run.system_requests} system requests "
          f"sent; transcripts in {folder}")  # fmt: skip
    raise_if_over([run.user_failures, run.system_failures], args.max_failure_rate, RESUME)
    return 0


def _system(args: argparse.Namespace, task: TaskData, cache: ResponseCache | None) -> System:
    from mtrbench.retrieve import RetrieverOptions, build_retriever  # deferred: the retriever loads torch
    from mtrbench.simulate.inprocess import RetrieverSystem  # deferred: loads the retriever's modules

    _check_history(args.history)
    retriever = build_retriever(args.model, RetrieverOptions.of(device=args.device, show_progress=not args.quiet))
    retriever.index(task.corpus)
    generator, client = None, None
    if args.generator_model:
        generator = model_judge(args.generator_model, args.generator_base_url, args, "generator")
        client = make_client(generator, cache)
    return RetrieverSystem(
        retriever, task.corpus, get_strategy(args.history), args.top_k, args.passages, generator, client, args.truncate
    )


def _check_history(name: str) -> None:
    strategy = get_strategy(name)
    if strategy.needs_rewriter or strategy.needs_gold_rewrite:
        raise UserInputError(f"--history {name} cannot serialize a simulated message (no rewrite of it exists)")


def _score(args: argparse.Namespace) -> int:
    from mtrbench.simulate.score import ScoreOptions, run_score  # deferred: loads the assessor

    check_share(args.max_failure_rate)
    judge = model_judge(args.judge_model, args.judge_base_url, args, "umbrela") if args.judge_model else None
    if args.nuggets and judge is None:
        raise UserInputError("--nuggets needs --judge-model (the model that creates and assigns the nuggets)")
    options = ScoreOptions(
        folder=Path(args.folder),
        k=args.k,
        base=args.discount_base,
        cache=cache_from_args(args),
        yes=args.yes,
        show_progress=not args.quiet,
        nuggets=args.nuggets,
        nuggets_from=args.nuggets_from,
        human_labels=Path(args.human_labels) if args.human_labels else None,
    )
    result = run_score(options, judge)
    s = result.summary
    tts = f"{s.turns_to_satisfaction:.2f}" if s.turns_to_satisfaction is not None else "-"
    abandon = f"{s.abandonment_rate:.2f}" if s.abandonment_rate is not None else "-"
    print(f"{s.sessions} sessions: turns to satisfaction {tts}, abandonment rate {abandon}, mean sDCG "
          f"{s.mean_sdcg:.4f}; {s.failed_turns} of {s.turns} turns failed; {len(result.labels)} UMBRELA labels; "
          f"{options.folder / 'score.json'}")  # fmt: skip
    if result.nugget_scores is not None:
        shown = ", ".join(f"{k} {v:.4f}" for k, v in result.nugget_scores.items() if k != "n")
        print(f"nuggets over {int(result.nugget_scores.get('n', 0))} answers: {shown or '-'}")
    if result.ppi is not None:
        p = result.ppi
        print(f"mean UMBRELA grade {p.llm_mean:.4f}; PPI with {p.labelled} human labels {p.ppi_mean:.4f} "
              f"[{p.ppi_low:.4f}, {p.ppi_high:.4f}]")  # fmt: skip
    failures = [*([result.label_failures] if result.label_failures else []), *result.nugget_failures]
    raise_if_over(failures, args.max_failure_rate, "score.json is written; a re-run asks only what failed")
    return 0


def _validate(args: argparse.Namespace) -> int:
    if not args.rankings and not args.user_model:
        raise UserInputError("simulate validate needs --rankings FILE.json, --user-model MODEL, or both")
    check_share(args.max_failure_rate)
    out: dict[str, object] = {}
    if args.rankings:
        from mtrbench.simulate.agreement import agreement, read_rankings  # deferred: numpy, scipy

        found = agreement(*read_rankings(args.rankings), samples=args.bootstrap)
        out["ranking_agreement"] = asdict(found)
        print(f"{found.systems} systems over {found.needs} needs: Kendall tau {found.tau:.4f} "
              f"[{found.tau_interval[0]:.4f}, {found.tau_interval[1]:.4f}], tau_AP {found.tau_ap:.4f} "
              f"[{found.tau_ap_interval[0]:.4f}, {found.tau_ap_interval[1]:.4f}]")  # fmt: skip
    failures: JudgeFailures | None = None
    if args.user_model:
        out["next_utterance"], failures = _predict(args)
    if args.output_dir:
        path = Path(args.output_dir) / "validation.json"
        atomic_write_text(path, json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    if failures is not None:
        raise_if_over([failures], args.max_failure_rate, "a re-run asks only the failed predictions again")
    return 0


def _predict(args: argparse.Namespace) -> tuple[dict[str, object], JudgeFailures]:
    from mtrbench.retrieve import RetrieverOptions, build_retriever  # deferred: loads torch
    from mtrbench.simulate.validate import (
        PredictOptions,
        encoder_similarity,
        predict,
        score_predictions,
    )  # deferred: torch

    if not args.output_dir:
        raise UserInputError("--user-model (next-utterance prediction) needs --output-dir for its log")
    _check_history(args.history)
    judge = _user_judge(args)
    task = _task(args)
    options = PredictOptions(Path(args.output_dir), args.k, cache_from_args(args), args.yes, not args.quiet)
    predicted, failures = predict(task, judge, options, args.limit)
    retriever = build_retriever(args.model, RetrieverOptions.of(device="cpu", show_progress=not args.quiet))
    retriever.index(task.corpus)
    found = score_predictions(task, predicted, encoder_similarity(args.encoder), retriever, args.k, args.history)
    cosines = [p.cosine for p in found if p.cosine is not None]
    overlaps = [p.overlap for p in found if p.overlap is not None]
    summary = {
        "turns": len(found),
        "failed": sum(1 for p in found if p.simulated is None),
        "mean_cosine": sum(cosines) / len(cosines) if cosines else None,
        "mean_overlap_at_k": sum(overlaps) / len(overlaps) if overlaps else None,
        "overlap_undefined": len(found) - len(overlaps) - sum(1 for p in found if p.simulated is None),
        "k": args.k,
        "encoder": args.encoder,
        "retriever": args.model,
        "history": args.history,
        "predictions": [asdict(p) for p in found],
    }
    mean_cos = f"{summary['mean_cosine']:.4f}" if cosines else "-"
    mean_ov = f"{summary['mean_overlap_at_k']:.4f}" if overlaps else "-"
    print(f"next utterance: {len(found)} turns, {summary['failed']} failed; mean cosine {mean_cos}, mean relevant "
          f"overlap@{args.k} {mean_ov} ({len(overlaps)} turns with a relevant passage found)", file=sys.stdout)  # fmt: skip
    return summary, failures
