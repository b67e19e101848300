"""`mtrbench synthesize`'s flags; the handlers are in mtrbench/cli/synthesize.py, imported only when the command runs."""

from __future__ import annotations

import argparse

from mtrbench.cli.common import Subparsers
from mtrbench.cli.flag_types import (
    non_negative_float,
    non_negative_int,
    open_share,
    positive_int,
    probability,
    seed,
)
from mtrbench.cli.flags.choices import QUALITY_CHOICES
from mtrbench.cli.flags.llm import add_max_failure_rate, add_request_limits
from mtrbench.synthesize.stages import STAGES

AGENT_NAMES = ("questioner", "responder", "polisher")
DEFAULT_HARD_SWITCHES = 1  # PlanOptions' default; the flag's default is None so that a given number is checked


def register(sub: Subparsers) -> dict[str, str]:
    p = sub.add_parser(
        "synthesize",
        help="MTR-PIPELINE: synthesize a conversational benchmark from a corpus",
        description="Curate, cluster (greedy traversal), generate dialogues with three LLM agents and "
        "write a native task folder (MTR-SUITE §4). Every stage writes into --out and "
        "resumes from it.",
    )
    # The order of these calls is the order of `mtrbench synthesize --help` and its usage line.
    _add_corpus_and_stage_flags(p)
    _add_curate_group(p)
    _add_cluster_group(p)
    _add_generate_group(p)
    g = p.add_argument_group("write")
    g.add_argument("--name", default="synthesized", help="task name of the card [synthesized]")
    return {"synthesize": "mtrbench.cli.synthesize:_cmd_synthesize"}


def _add_corpus_and_stage_flags(p: argparse.ArgumentParser) -> None:
    """The corpus, the work folder and how far the pipeline runs."""
    p.add_argument("corpus", help="JSONL or Parquet file, folder of .txt/.md files, or Hugging Face dataset id")
    p.add_argument("--corpus-split", default="train", help="split of a Hugging Face dataset corpus [train]")
    p.add_argument("--out", required=True, help="work folder (stage outputs; the task lands in OUT/task)")
    p.add_argument(
        "--stage",
        default="all",
        choices=(*STAGES, "all"),
        help="run up to this stage (earlier finished stages are reused) [all]",
    )
    p.add_argument("--seed", type=seed, default=0, help="seed of every random choice [0]")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def _add_curate_group(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("curate")
    g.add_argument("--chunk-size", type=positive_int, default=1024, help="target characters per chunk [1024]")
    g.add_argument("--min-chunk-chars", type=non_negative_int, default=200, help="drop shorter chunks [200]")
    g.add_argument("--minhash-threshold", type=open_share, default=0.8, help="near-duplicate Jaccard threshold [0.8]")
    g.add_argument("--minhash-permutations", type=positive_int, default=128, help="MinHash permutations [128]")
    g.add_argument(
        "--quality",
        default="heuristic",
        choices=QUALITY_CHOICES,
        help="quality filter: the seed's Hub classifiers, or the offline heuristic stand-in [heuristic]",
    )


def _add_cluster_group(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("cluster")
    g.add_argument("--embedding-model", default="minilm", help="any mtrbench embedding model [minilm]")
    g.add_argument("--device", default="auto", help="device for embeddings and quality classifiers [auto]")
    g.add_argument("--neighbours", type=positive_int, default=64, help="k of the nearest-neighbour graph [64]")
    g.add_argument("--cluster-size", type=positive_int, default=8, help="chunks per cluster [8]")
    g.add_argument(
        "--ngram-threshold",
        type=open_share,
        default=0.5,
        help="drop a chunk whose word 5-gram Jaccard with the previous one on the path is >= this [0.5]",
    )
    g.add_argument(
        "--knn",
        default="exact",
        choices=("exact", "faiss", "faiss-hnsw"),
        help="kNN graph: exact torch top-k, faiss exact, or faiss HNSW (approximate; large corpora) [exact]",
    )


def _add_generate_group(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("generate")
    _add_conversation_shape_flags(g)
    _add_agent_flags(g)
    _add_agent_request_flags(g)


def _add_conversation_shape_flags(g: argparse._ArgumentGroup) -> None:
    """How many conversations, how long, and how often they switch topic."""
    g.add_argument("--conversations", type=positive_int, help="conversations to generate [one per cluster]")
    g.add_argument("--turns", type=positive_int, default=8, help="turns per conversation (12: the newer release) [8]")
    g.add_argument(
        "--hard-switches",
        type=non_negative_int,
        help="hard topic switches per conversation, on turns 3..T: at most --turns minus 2 "
        f"[{DEFAULT_HARD_SWITCHES}, where the turns allow it]",
    )
    g.add_argument(
        "--soft-switch-probability",
        type=probability,
        default=0.5,
        help="chance that a non-hard turn switches softly along the cluster [0.5]",
    )


def _add_agent_flags(g: argparse._ArgumentGroup) -> None:
    """The models and endpoints of the three agents (a judges file, or flags)."""
    g.add_argument(
        "--agents", metavar="FILE", help="YAML/JSON judges file with entries named questioner, responder and polisher"
    )
    g.add_argument("--llm-model", help="model for all three agents (overridden per agent below)")
    for agent in AGENT_NAMES:
        g.add_argument(f"--{agent}-model", help=f"model of the {agent}")
        g.add_argument(f"--{agent}-base-url", help=f"endpoint of the {agent} [--base-url]")
    g.add_argument("--base-url", help="OpenAI-compatible endpoint for the agents [env OPENAI_BASE_URL]")
    g.add_argument("--api-key-env", default="OPENAI_API_KEY", help="variable holding the API key [OPENAI_API_KEY]")
    g.add_argument("--concurrency", type=positive_int, help="requests in flight per agent [8]")


def _add_agent_request_flags(g: argparse._ArgumentGroup) -> None:
    """Request limits, failure and cost limits, retries, dry run and the response cache of the agents."""
    add_request_limits(g)
    add_max_failure_rate(
        g,
        "more than this share of the conversations were dropped (a request failed or a reply "
        "stayed unusable); finished ones stay in the log, the task is then not written",
    )
    g.add_argument(
        "--max-cost", type=non_negative_float, metavar="USD", help="refuse to start above, and stop at, this cost"
    )
    g.add_argument(
        "--retry-dropped",
        type=non_negative_int,
        default=2,
        metavar="N",
        help="reruns try a dropped conversation again, with other seeds, up to N times in all [2]",
    )
    g.add_argument("--dry-run", action="store_true", help="print the cost estimate and first prompt; send nothing")
    g.add_argument(
        "--llm-cache",
        metavar="PATH",
        help="sqlite response cache [$MTRBENCH_CACHE_DIR/llm.sqlite, else ~/.cache/mtrbench/llm.sqlite]",
    )
    g.add_argument("--no-llm-cache", action="store_true", help="neither read nor write the response cache")
