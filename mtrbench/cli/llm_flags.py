"""Flags shared by the commands that call LLM judges (``audit``, ``assess``), and their conversion into
judge configurations and a response cache."""

from __future__ import annotations

import argparse
import dataclasses

from mtrbench.cli.flag_types import failure_share, non_negative_int, positive_int, seed, temperature, timeout_seconds
from mtrbench.generation.model_history import RewriterOptions
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

DEFAULT_KEY_ENV = "OPENAI_API_KEY"


def add_llm_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("LLM judges")
    group.add_argument(
        "--judges", metavar="FILE", help="YAML/JSON file listing the judges (several = an ensemble) and optional prices"
    )
    group.add_argument("--llm-model", metavar="MODEL", help="a single judge: model id on the server")
    group.add_argument(
        "--llm-base-url",
        metavar="URL",
        help="OpenAI-compatible endpoint for --llm-model, e.g. http://127.0.0.1:8000/v1 "
        "[env OPENAI_BASE_URL, else https://api.openai.com/v1]",
    )
    add_run_flags(
        group, key_for="--llm-model", concurrency_help="requests in flight per judge (overrides the judges file) [8]"
    )
    add_max_failure_rate(
        group,
        "a judge failed (HTTP error, unusable reply) on more than this share of its items; "
        "outputs are written either way",
    )


def add_max_failure_rate(group: argparse._ArgumentGroup, when: str) -> None:
    """``--max-failure-rate``, the same flag on every LLM-using command; ``when``: what makes the command exit 1."""
    group.add_argument(
        "--max-failure-rate",
        type=failure_share,
        default=DEFAULT_MAX_FAILURE_RATE,
        metavar="SHARE",
        help=f"exit 1 when {when} [{DEFAULT_MAX_FAILURE_RATE}]",
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


def add_rewriter_arguments(parser: argparse.ArgumentParser, *, with_run_flags: bool = True) -> None:
    """The model behind ``--history rewrite:llm`` / ``summary:llm`` (eval, generate)."""
    group = parser.add_argument_group("rewriter model (--history rewrite:llm, summary:llm)")
    group.add_argument(
        "--rewriter-model", metavar="MODEL", help="model id that writes stand-alone questions or history summaries"
    )
    group.add_argument(
        "--rewriter-base-url",
        metavar="URL",
        help="OpenAI-compatible endpoint for --rewriter-model, or hf://MODEL_OR_PATH to run it "
        "in-process with transformers [env OPENAI_BASE_URL, else https://api.openai.com/v1]",
    )
    add_sampling_flags(group, "rewriter", prefix="rewriter-")
    if with_run_flags:
        add_run_flags(group)
        add_max_failure_rate(
            group,
            "the rewriter failed on more than this share of its requests; that history is "
            "then not written. Within it, the queries it failed on are left out of the "
            "history's scores (counted) and asked again on the next run",
        )


def add_run_flags(
    group: argparse._ArgumentGroup,
    key_for: str | None = None,
    concurrency_help: str = "requests in flight (hf://: generation batch size) [8]",
) -> None:
    """Key, cache, dry run, confirmation and concurrency: the flags every command that sends requests takes."""
    group.add_argument(
        "--api-key-env",
        metavar="NAME",
        help=f"environment variable holding the API key{' for ' + key_for if key_for else ''} [{DEFAULT_KEY_ENV}]",
    )
    group.add_argument(
        "--llm-cache",
        metavar="PATH",
        help="sqlite response cache [$MTRBENCH_CACHE_DIR/llm.sqlite, else ~/.cache/mtrbench/llm.sqlite]",
    )
    group.add_argument("--no-llm-cache", action="store_true", help="neither read nor write the response cache")
    group.add_argument(
        "--dry-run", action="store_true", help="print the first prompts and the request count; send nothing"
    )
    group.add_argument("--yes", action="store_true", help="run without asking to confirm the cost estimate")
    group.add_argument("--concurrency", type=positive_int, metavar="N", help=concurrency_help)
    add_request_limits(group)


def add_request_limits(group: argparse._ArgumentGroup) -> None:
    """Per-request time limit, transport retries and re-asks, over the judges file's values."""
    group.add_argument(
        "--timeout",
        type=timeout_seconds,
        metavar="SECONDS",
        help="seconds to wait for each reply before it counts as failed (a slow local server wants "
        "more; with hf://, seconds per generation batch) [judges file's timeout_s, else 60; "
        "hf://: 900]",
    )
    group.add_argument(
        "--max-retries",
        type=non_negative_int,
        metavar="N",
        help="transport retries per request (timeouts, 429, 5xx, connection errors) [judges file's "
        "max_retries, else 5]",
    )
    group.add_argument(
        "--parse-retries",
        type=non_negative_int,
        metavar="N",
        help="re-asks of a reply that cannot be read, each a changed request (a repair turn, then "
        "another seed) [judges file's parse_retries, else 2]",
    )


def add_sampling_flags(group: argparse._ArgumentGroup, who: str, prefix: str = "") -> None:
    """``--[PREFIX]temperature`` and, without a prefix, ``--seed``: how a model named on the command line samples.
    Both are recorded with each answer (and the rewriter's temperature in its identity) and compared on reuse."""
    group.add_argument(
        f"--{prefix}temperature",
        type=temperature,
        metavar="T",
        help=f"sampling temperature of the {who} (0: greedy) [0]",
    )
    if not prefix:
        group.add_argument(
            "--seed",
            type=seed,
            metavar="N",
            help=f"seed sent with each {who} request (servers that honour it sample reproducibly; "
            "hf:// seeds its sampling) [none]",
        )


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
