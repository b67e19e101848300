"""`mtrbench generate`'s flags; the handlers are in mtrbench/cli/generate.py, imported only when the command runs."""

from __future__ import annotations

import argparse

from mtrbench.cli.common import Subparsers
from mtrbench.cli.flag_types import conversation_limit, non_negative_int, positive_int
from mtrbench.cli.flags.choices import GENERATION_HISTORY as DEFAULT_HISTORY
from mtrbench.cli.flags.choices import GENERATION_TOP_K as DEFAULT_TOP_K
from mtrbench.cli.flags.llm import (
    add_max_failure_rate,
    add_rewriter_arguments,
    add_run_flags,
    add_sampling_flags,
)


def register(sub: Subparsers) -> dict[str, str]:
    p = sub.add_parser(
        "generate",
        help="conversational RAG: answer each turn with citations [n]",
        description="For each turn, prompt a generator with the chosen compression of the history "
        "and the top-k passages of a retrieval result (or the gold passages, --oracle); "
        "writes generations.jsonl beside the result, one record per turn, appended as "
        "turns finish. Resumable: a rerun asks only for turns not in the file.",
    )
    p.add_argument("--task", default="mtrbench-sample", help="task name, card YAML or data folder [mtrbench-sample]")
    p.add_argument("--split", help="split [the card's eval split]")
    p.add_argument("--data-dir", help="local copy of the task's data, laid out as published")
    p.add_argument("--corpus", help="external corpus, for tasks that do not ship one")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--run",
        metavar="PATH",
        help="retrieval result: a TREC run file, an eval result .json, or a folder with one *.run.trec",
    )
    source.add_argument("--oracle", action="store_true", help="the gold passages (qrels grade > 0) instead of a run")
    p.add_argument("--top-k", type=positive_int, default=DEFAULT_TOP_K, help=f"passages per prompt [{DEFAULT_TOP_K}]")
    p.add_argument(
        "--history",
        default=DEFAULT_HISTORY,
        metavar="NAME",
        help="eval's --history names: full: whole history; last-response: earlier questions + last "
        "response (CORAL); rewrite: the task's gold rewrite; rewrite:llm: a rewriter model's; "
        f"summary:llm: a model's summary of the history, then the question [{DEFAULT_HISTORY}]",
    )
    _add_output_flags(p)
    p.add_argument(
        "--max-passage-chars",
        type=non_negative_int,
        default=0,
        help="cut each passage shown to the generator to this many characters, 0 = whole [0]",
    )
    p.add_argument("--max-tokens", type=positive_int, default=512, help="answer length limit in tokens [512]")
    add_sampling_flags(p, "generator")
    p.add_argument(
        "--limit",
        type=conversation_limit,
        metavar="N",
        help="only the first N conversations (file order), as eval (a smoke run)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    group = p.add_argument_group("generator model")
    group.add_argument(
        "--model",
        dest="generator_model",
        required=True,
        metavar="MODEL",
        help="generator model id on the server (with hf://: any name for the records)",
    )
    group.add_argument(
        "--base-url",
        dest="generator_base_url",
        metavar="URL",
        help="OpenAI-compatible endpoint, or hf://MODEL_OR_PATH to run a transformers chat model "
        "in-process [env OPENAI_BASE_URL, else https://api.openai.com/v1]",
    )
    add_run_flags(group)
    add_max_failure_rate(
        group,
        "more than this share of the turns asked failed (HTTP error, timeout, unusable "
        "reply, a failed rewrite); answers are written either way, failed turns listed",
    )
    add_rewriter_arguments(p, with_run_flags=False)
    return {"generate": "mtrbench.cli.generate:_cmd_generate"}


def _add_output_flags(p: argparse.ArgumentParser) -> None:
    """Where the answers go: the generations file, and an MTRAGEval or TREC iKAT run file beside it."""
    p.add_argument(
        "--output",
        help="generations JSONL [<task>.<generator>.<history>.generations.jsonl beside the run; in "
        "results/generations/<task>/oracle/ with --oracle]",
    )
    p.add_argument(
        "--mtrag-out",
        metavar="FILE.jsonl",
        help="also write the answers as an MTRAGEval prediction file, checked with MTRAG's format rules: "
        "Task B (generation_taskb) with --oracle (an MTRAG-UN card's reference passages), Task C "
        "(rag_taskc) with --run; contexts = the passages shown. Score it with `mtrbench judge mtrag`",
    )
    p.add_argument(
        "--ikat-out",
        metavar="FILE",
        help="also write the answers as a TREC iKAT run file (the official JSON of an ikat-* card's year; 2025: "
        "JSON lines): each turn's answer as the response text, the run's top 1000 passages (--oracle: the "
        "passages shown), those shown to the generator marked used; checked with the organisers' structural "
        "checks (docs/ikat.md)",
    )
    p.add_argument(
        "--passage-db",
        metavar="DB",
        help="with --ikat-out: the organisers' passage-id database (sqlite) to check the passage ids against",
    )
