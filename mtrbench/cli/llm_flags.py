"""Flags shared by the commands that call LLM judges (``audit``, ``assess``), and their conversion into
judge configurations and a response cache."""

from __future__ import annotations

import argparse
import dataclasses

from mtrbench.cli.flags.llm import DEFAULT_KEY_ENV
from mtrbench.infra.errors import MtrbenchError
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig, judge_from_flags, load_judges
from mtrbench.llm.failure_rate import (
    DEFAULT_MAX_FAILURE_RATE,
    EXIT_JUDGE_FAILURES,
    check_share,
    failure_message,
    over_limit,
)


def check_failure_rates(args: argparse.Namespace, counts) -> int:
    """0, or 1 after one `error:` line on stderr per judge over --max-failure-rate."""
    import sys

    bad = over_limit(counts, check_share(args.max_failure_rate))
    for c in bad:
        print(failure_message(c, args.max_failure_rate), file=sys.stderr)
    return EXIT_JUDGE_FAILURES if bad else 0


def judges_from_args(args: argparse.Namespace) -> list[JudgeConfig]:
    judges_file = getattr(args, "judges", None)
    model = getattr(args, "llm_model", None)
    base_url = getattr(args, "llm_base_url", None)
    key_env = getattr(args, "api_key_env", None)
    if judges_file and model:
        raise MtrbenchError("give either --judges FILE or --llm-model MODEL, not both")
    if judges_file:
        if base_url or key_env:
            raise MtrbenchError(
                "--llm-base-url and --api-key-env apply to --llm-model; with --judges put "
                "base_url and api_key_env in the judges file"
            )
        judges = load_judges(judges_file)
    elif model:
        judges = [judge_from_flags(model, base_url, key_env or DEFAULT_KEY_ENV)]
    else:
        raise MtrbenchError(
            "an LLM judge is needed: pass --judges FILE or --llm-model MODEL "
            "(with --llm-base-url URL for a local vLLM/SGLang server)"
        )
    return [request_overrides(j, args) for j in judges]


def request_overrides(judge: JudgeConfig, args: argparse.Namespace) -> JudgeConfig:
    """--concurrency, --timeout, --max-retries and --parse-retries over what the judges file (or the defaults)
    say."""
    concurrency, timeout = getattr(args, "concurrency", None), getattr(args, "timeout", None)
    retries, reasks = getattr(args, "max_retries", None), getattr(args, "parse_retries", None)
    if concurrency is not None and concurrency < 1:
        raise MtrbenchError(f"--concurrency must be at least 1, got {concurrency}")
    if timeout is not None and not timeout > 0:
        raise MtrbenchError(f"--timeout is seconds per request and must be positive, got {timeout:g}")
    if retries is not None and retries < 0:
        raise MtrbenchError(f"--max-retries must be 0 or more, got {retries}")
    if reasks is not None and reasks < 0:
        raise MtrbenchError(f"--parse-retries must be 0 or more, got {reasks}")
    changes = {
        name: value
        for name, value in (
            ("concurrency", concurrency),
            ("timeout_s", timeout),
            ("max_retries", retries),
            ("parse_retries", reasks),
        )
        if value is not None
    }
    return dataclasses.replace(judge, **changes) if changes else judge


def cache_from_args(args: argparse.Namespace) -> ResponseCache | None:
    if getattr(args, "no_llm_cache", False):
        if getattr(args, "llm_cache", None):
            raise MtrbenchError("--llm-cache and --no-llm-cache contradict each other")
        return None
    return ResponseCache(getattr(args, "llm_cache", None))


def sampling_overrides(
    judge: JudgeConfig, temperature: float | None, seed: int | None = None, flag: str = "--temperature"
) -> JudgeConfig:
    if temperature is not None and not (0 <= temperature <= 2):
        raise MtrbenchError(f"{flag} must be between 0 and 2, got {temperature:g}")
    if temperature is not None:
        judge = dataclasses.replace(judge, temperature=temperature)
    if seed is not None:
        judge = dataclasses.replace(judge, extra_body={**judge.extra_body, "seed": seed})
    return judge


def model_judge(model: str, base_url: str | None, args: argparse.Namespace, role: str) -> JudgeConfig:
    """A ``JudgeConfig`` for a generator or rewriter named on the command line."""
    judge = judge_from_flags(model, base_url, getattr(args, "api_key_env", None) or DEFAULT_KEY_ENV, name=role)
    return request_overrides(judge, args)


def rewriter_from_args(args: argparse.Namespace, show_progress: bool = True):
    """``RewriterOptions`` from the rewriter flags, or None when no rewriter model is named."""
    from mtrbench.generation.model_history import RewriterOptions  # deferred: loads the in-process LLM runner

    if not args.rewriter_model:
        if args.rewriter_base_url:
            raise MtrbenchError("--rewriter-base-url needs --rewriter-model")
        return None
    judge = sampling_overrides(
        model_judge(args.rewriter_model, args.rewriter_base_url, args, "rewriter"),
        getattr(args, "rewriter_temperature", None),
        flag="--rewriter-temperature",
    )
    cache = None if args.dry_run else cache_from_args(args)

    max_rate = check_share(getattr(args, "max_failure_rate", DEFAULT_MAX_FAILURE_RATE))
    return RewriterOptions(
        judge=judge,
        cache=cache,
        yes=args.yes,
        dry_run=args.dry_run,
        show_progress=show_progress,
        max_failure_rate=max_rate,
    )
