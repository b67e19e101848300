"""`mtrbench rag`'s flags; the handlers are in mtrbench/cli/rag.py, imported only when the command runs."""

from __future__ import annotations

import argparse

from mtrbench.cli.common import Subparsers, add_data_options
from mtrbench.cli.flag_types import chunking_spec, conversation_limit, non_negative_int, positive_int, share
from mtrbench.cli.flags.choices import DEFAULT_HISTORY, GENERATION_HISTORIES
from mtrbench.cli.flags.choices import GENERATION_TOP_K as DEFAULT_TOP_K
from mtrbench.cli.flags.llm import (
    add_max_failure_rate,
    add_rewriter_arguments,
    add_run_flags,
    add_sampling_flags,
)
from mtrbench.cli.flags.models import add_model_kind
from mtrbench.judge.defaults import DEFAULT_MEASURES, DEFAULT_RAGALIGN


def register(sub: Subparsers) -> dict[str, str]:
    p = sub.add_parser(
        "rag",
        help="conversational RAG end to end: retrieve, generate, judge, RAGAlign",
        description="Retrieve with --model (as `mtrbench eval`), answer each turn from the top "
        "--passages of that result with --generator-model (as `mtrbench generate`), "
        "score the answers (reference measures; an LLM judge's verdicts or 1-10 ratings) "
        "and relate them to retrieval (RAGAlign). Every file lands beside the retrieval "
        "result; a rerun asks only for the turns not yet generated or judged.",
    )
    # The order of these calls is the order of `mtrbench rag --help` and its usage line.
    _add_retriever_flags(p)
    p.add_argument(
        "--output-dir", default="results", help="where the retrieval result and everything beside it go [results]"
    )
    p.add_argument("--quiet", action="store_true", help="no progress output")
    _add_retrieval_settings_group(p)
    _add_generation_group(p)
    _add_judging_group(p)
    _add_llm_requests_group(p)
    add_rewriter_arguments(p, with_run_flags=False)
    return {"rag": "mtrbench.cli.rag:_cmd_rag"}


def _add_retriever_flags(p: argparse.ArgumentParser) -> None:
    """The retriever, the task and how the retrieval queries are built, as `mtrbench eval` takes them."""
    p.add_argument("--model", default="minilm", help="retriever: alias, HF id or local folder, or bm25 [minilm]")
    add_model_kind(p)
    p.add_argument("--task", default="mtrbench-sample", help="task name, card YAML or data folder [mtrbench-sample]")
    add_data_options(p)
    p.add_argument(
        "--history",
        default="full",
        help="retrieval history strategy, one of eval's (rewrite:llm/summary:llm need --rewriter-model) [full]",
    )
    p.add_argument("--truncate", default="left", choices=["left", "right", "none"], help="as in eval [left]")
    p.add_argument("--device", default="auto", help="retriever device: auto | cpu | cuda | cuda:N [auto]")
    p.add_argument("--max-length", type=positive_int, help="retriever token limit [model's]")
    p.add_argument("--cache-dir", help="corpus embedding cache [as eval]")
    p.add_argument("--no-cache", action="store_true", help="encode the corpus without the embedding cache")


def _add_retrieval_settings_group(p: argparse.ArgumentParser) -> None:
    """Hybrid and parent-child retrieval settings, as eval's flags of the same names."""
    parents = p.add_argument_group("retrieval settings (as eval)")
    parents.add_argument(
        "--alpha", type=share, help="hybrid:DENSE+bm25 only: dense share of the min-max normalized scores [0.7]"
    )
    parents.add_argument(
        "--candidate-k",
        type=positive_int,
        help="hybrid, or children with --chunking: retrieved per query [max(top-k, 100)]",
    )
    parents.add_argument(
        "--chunking",
        type=chunking_spec,
        help="parent-child retrieval: children of sentences:SIZE:STRIDE (H-RAG: "
        "sentences:3:2), parents scored by their best child; the generator "
        "is shown the parents",
    )
    parents.add_argument(
        "--rank-parents",
        action="store_true",
        help="with --chunking: rescore the candidate parents on their own text with the same model",
    )


def _add_generation_group(p: argparse.ArgumentParser) -> None:
    """The generator, what it is shown of the retrieval result and of the conversation, and its output files."""
    gen = p.add_argument_group("generation")
    gen.add_argument("--generator-model", required=True, metavar="MODEL", help="generator model id on the server")
    gen.add_argument(
        "--generator-base-url",
        metavar="URL",
        help="OpenAI-compatible endpoint, or hf://MODEL_OR_PATH [env OPENAI_BASE_URL, else OpenAI's]",
    )
    gen.add_argument(
        "--passages",
        type=positive_int,
        default=DEFAULT_TOP_K,
        help=f"top passages of the retrieval result shown per turn [{DEFAULT_TOP_K}]",
    )
    gen.add_argument(
        "--answer-history",
        default=DEFAULT_HISTORY,
        metavar="NAME",
        help=f"history the generator sees, as generate --history: {', '.join(GENERATION_HISTORIES)} "
        f"[{DEFAULT_HISTORY}]",
    )
    gen.add_argument(
        "--max-passage-chars", type=non_negative_int, default=0, help="cut each passage shown, 0 = whole [0]"
    )
    gen.add_argument("--max-tokens", type=positive_int, default=512, help="answer length limit in tokens [512]")
    add_sampling_flags(gen, "generator")
    gen.add_argument(
        "--mtrag-out",
        metavar="FILE.jsonl",
        help="also write the answers as an MTRAGEval Task C prediction file (rag_taskc: contexts = the "
        "passages shown), checked with MTRAG's format rules; score it with `mtrbench judge mtrag`",
    )
    gen.add_argument(
        "--limit",
        type=conversation_limit,
        metavar="N",
        help="only the first N conversations (file order): retrieval and generation, as eval [all]",
    )


def _add_judging_group(p: argparse.ArgumentParser) -> None:
    """Reference measures, the LLM judge and RAGAlign over its verdicts."""
    judging = p.add_argument_group("judging")
    judging.add_argument(
        "--measures",
        default=",".join(DEFAULT_MEASURES),
        help=f"reference measures, comma list ('' for none) [{','.join(DEFAULT_MEASURES)}]",
    )
    judging.add_argument(
        "--judge",
        default="verdict",
        choices=["verdict", "rating", "none"],
        help="LLM judge: correct/incorrect verdicts (feed RAGAlign), RAD-Bench 1-10 ratings, or none [verdict]",
    )
    judging.add_argument("--judge-model", metavar="MODEL", help="judge model id [the generator model, with a note]")
    judging.add_argument("--judge-base-url", metavar="URL", help="judge endpoint [--generator-base-url]")
    judging.add_argument(
        "--judge-max-tokens",
        type=positive_int,
        metavar="N",
        help="judge reply length limit in tokens (a verdict or rating needs few) [1024]",
    )
    judging.add_argument(
        "--scenario", default="RR", choices=["RS", "RR", "TR"], help="RAD-Bench prompt family for --judge rating [RR]"
    )
    judging.add_argument(
        "--ragalign",
        default=",".join(DEFAULT_RAGALIGN),
        help=f"RAGAlign measures over the verdicts ('' for none) [{','.join(DEFAULT_RAGALIGN)}]",
    )
    judging.add_argument(
        "--nuggets",
        action="store_true",
        help="also nugget evaluation of the answers by the judge model (as `judge nuggets`: nuggets created from "
        "each turn's relevant passages; strict_vital, vital, strict_all, all) [off]",
    )


def _add_llm_requests_group(p: argparse.ArgumentParser) -> None:
    """Dry run, confirmation, response cache and the failure-rate limit of every LLM stage."""
    requests = p.add_argument_group("LLM requests (generator, judge, rewriter)")
    add_run_flags(requests)
    add_max_failure_rate(
        requests,
        "a stage (rewriter, generation, judging) failed on more than this share of its "
        "items; the run stops at that stage, what finished is written and the stage named",
    )
