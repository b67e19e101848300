"""Flags shared by the commands that send LLM requests (judges, generators, rewriters); what they become is in mtrbench/cli/llm_flags.py."""

from __future__ import annotations

import argparse

from mtrbench.cli.flag_types import failure_share, non_negative_int, positive_int, seed, temperature, timeout_seconds
from mtrbench.llm.failure_rate import (
    DEFAULT_MAX_FAILURE_RATE,
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
