"""`mtrbench eval`'s flags; the handlers are in mtrbench/cli/eval.py, imported only when the command runs."""

from __future__ import annotations

import argparse

from mtrbench.cli.common import (
    Subparsers,
    add_analysis_options,
    add_data_options,
)
from mtrbench.cli.flag_types import (
    ListFlag,
    chunking_spec,
    conversation_limit,
    positive_int,
    share,
)
from mtrbench.cli.flags.choices import DEFAULT_OVERWRITE, OFFICIAL_PROTOCOLS, OVERWRITE_STRATEGIES
from mtrbench.cli.flags.llm import add_rewriter_arguments
from mtrbench.cli.flags.models import add_model_kind

DEFAULT_MODEL, DEFAULT_TASK = "minilm", "mtrbench-sample"


def register(sub: Subparsers) -> dict[str, str]:
    p = sub.add_parser(
        "eval",
        help="evaluate a retriever on a conversational task",
        description="Evaluate a retriever on a task. With no arguments: MiniLM on the embedded "
        "offline sample (mtrbench-sample).",
    )
    # The order of these calls is the order of `mtrbench eval --help` and its usage line.
    _add_run_selection_flags(p)
    add_data_options(p)
    _add_query_format_flags(p)
    _add_encoder_flags(p)
    _add_scale_flags(p)
    _add_hybrid_and_rerank_flags(p)
    _add_scoring_flags(p)
    _add_model_source_and_output_flags(p)
    add_analysis_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress output")
    add_rewriter_arguments(p)
    return {"eval": "mtrbench.cli.eval:_cmd_eval"}


def _add_run_selection_flags(p: argparse.ArgumentParser) -> None:
    """Which models on which tasks, how much of each, and what happens to finished results."""
    p.add_argument(
        "-m",
        "--model",
        action="append",
        help="alias (`mtrbench models`), HF id or local folder; repeat or comma list: every model x task [minilm]",
    )
    add_model_kind(p)
    p.add_argument(
        "-t",
        "--task",
        action="append",
        help="task name (`mtrbench tasks`), card YAML or data folder; repeat or comma list [mtrbench-sample]",
    )
    p.add_argument(
        "--overwrite-strategy",
        default=DEFAULT_OVERWRITE,
        choices=OVERWRITE_STRATEGIES,
        help="only-missing: skip results finished with the same settings (a note on stderr), evaluate "
        "the rest; never: as only-missing, but a result with other settings is an error, not "
        "replaced; always: evaluate and replace (mteb's strategies) [only-missing]",
    )
    p.add_argument(
        "--limit",
        type=conversation_limit,
        metavar="N",
        help="evaluate the first N conversations of each task (file order); recorded in the settings and "
        "the experiment folder (limit=N), so it never passes as a full run [all]",
    )


def _add_query_format_flags(p: argparse.ArgumentParser) -> None:
    """How a conversation becomes the query text: the history strategy and the serialization."""
    p.add_argument(
        "--history",
        default="full",
        help="current | full | window:K | questions | last-response | rewrite | reasoning | full+reasoning "
        "(RECOR's gold retrieval reasoning) | rewrite:llm | summary:llm | "
        "query2doc | hyde | mugi (LLM query expansion, with --rewriter-model); "
        "comma list or 'all' (the strategies that need no model) [full]",
    )
    p.add_argument(
        "--truncate",
        default="left",
        choices=["left", "right", "none"],
        help="left keeps the current question and drops the oldest text; right = tokenizer default [left]",
    )
    p.add_argument("--user-prefix", default="User: ")
    p.add_argument("--assistant-prefix", default="Agent: ")
    p.add_argument("--separator", default="\\n", help="between messages (escapes like \\n allowed) [\\n]")
    p.add_argument("--order", default="history-first", choices=["history-first", "current-first"])
    p.add_argument(
        "--ptkb",
        default="none",
        help="TREC iKAT's personal statements in the query: none | all | gold | top:K | top:K@MODEL (the K "
        "an encoder ranks highest; the retriever's own model by default); one 'Personal: ' line each, between "
        "the history and the question (docs/ikat.md) [none]",
    )


def _add_encoder_flags(p: argparse.ArgumentParser) -> None:
    """Where and how the model encodes (device, batches, dual-encoder towers, the embedding cache) and top-k."""
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N [auto]")
    p.add_argument("--dtype", default="auto", help="auto (bf16 on CUDA, fp32 on CPU) | fp32 | fp16 | bf16")
    p.add_argument(
        "--batch-size", type=positive_int, help="at most this many texts per batch [no cap: --token-budget decides]"
    )
    p.add_argument(
        "--token-budget",
        type=positive_int,
        help="tokens per batch, padding included (texts are length-sorted) [4096 on CPU, 65536 on CUDA]",
    )
    p.add_argument(
        "--unpad",
        default="auto",
        choices=["auto", "on", "off"],
        help="pack batches without padding: auto = on CUDA when the model passes a self-check [auto]",
    )
    p.add_argument(
        "--engine-mode",
        default="auto",
        choices=["auto", "eager", "static", "fused"],
        help="packed batches as launched (eager), padded to the token budget and replayed as CUDA graphs "
        "(static), or static with compiled LayerNorm/GELU/residual kernels (fused); each checked against eager "
        "on probe texts, falling back with a logged reason; auto = fused on CUDA, eager elsewhere "
        "(docs/encoding.md) [auto]",
    )
    p.add_argument(
        "--max-length", type=positive_int, help="token limit for queries and documents, up to the model's own [model's]"
    )
    p.add_argument(
        "--instruction",
        help="instruction-tuned embedders: the task description filled into the model's instruction template "
        "[the task card's, else a conversational-retrieval default: docs/llm-embedders.md]",
    )
    p.add_argument(
        "--instruction-template",
        help="the query prompt with a {task} placeholder, e.g. 'Instruct: {task}\\nQuery: ' [the alias's]",
    )
    p.add_argument("--query-model", help="dual encoder: query tower (transformers folder or HF id); with --doc-model")
    p.add_argument("--doc-model", help="dual encoder: document tower; with --query-model")
    p.add_argument("--pooling", choices=["cls", "mean", "last"], help="dual encoder pooling [cls]")
    p.add_argument("--similarity", choices=["dot", "cosine"], help="dual encoder similarity [dot]")
    p.add_argument(
        "--cache-dir", help="corpus embedding cache [$MTRBENCH_CACHE_DIR/embeddings or ~/.cache/mtrbench/embeddings]"
    )
    p.add_argument("--no-cache", action="store_true", help="encode the corpus without reading or writing the cache")
    p.add_argument("--top-k", type=positive_int, default=100, help="documents retrieved per query [100]")


def _add_scale_flags(p: argparse.ArgumentParser) -> None:
    """The "past one device" group: Ray, out-of-memory search and approximate indexes."""
    scale = p.add_argument_group("past one device (docs/scale.md)")
    scale.add_argument(
        "--ray",
        action="store_true",
        help="encode the corpus on a local Ray (an actor pool of the "
        "engine) and search its cached shards in Ray workers",
    )
    scale.add_argument("--ray-address", metavar="ADDR", help="as --ray, on the Ray cluster at ADDR (ray.init address)")
    scale.add_argument(
        "--ray-workers", type=positive_int, help="encoding actors and search workers [one per GPU, else 2]"
    )
    scale.add_argument(
        "--search-memory",
        metavar="SIZE",
        help="search the cached corpus embeddings from disk in this footprint (e.g. 8GB, 512MB)",
    )
    scale.add_argument(
        "--index",
        help="exact (default) | faiss:ivf-flat|ivf-pq|hnsw[,name=value...], approximate "
        "(e.g. faiss:ivf-flat,nlist=1024,nprobe=32; docs/scale.md); learned sparse models: "
        "seismic[:name=value,...] or seismic:exhaustive (docs/sparse.md)",
    )
    scale.add_argument(
        "--sparse-top-k",
        type=positive_int,
        metavar="K",
        help="learned sparse models: keep each query's and passage's K largest weights (recorded) [all]",
    )


def _add_hybrid_and_rerank_flags(p: argparse.ArgumentParser) -> None:
    """Hybrid fusion, parent-child chunking and cross-encoder reranking on top of the first stage."""
    p.add_argument(
        "--alpha",
        type=ListFlag(share),
        help="hybrid:DENSE+bm25 only: dense share, score = alpha * dense_norm + "
        "(1 - alpha) * bm25_norm (min-max per query); a comma list sweeps [0.7]",
    )
    p.add_argument(
        "--candidate-k",
        type=ListFlag(positive_int),
        help="hybrid only: documents each leg retrieves before the union; a comma list sweeps [max(top-k, 100)]",
    )
    p.add_argument(
        "--chunking",
        type=chunking_spec,
        help="parent-child retrieval: children of sentences:SIZE:STRIDE (H-RAG: "
        "sentences:3:2) are retrieved (--candidate-k of them), parents scored by their "
        "best child",
    )
    p.add_argument(
        "--rank-parents",
        action="store_true",
        help="with --chunking: rescore the parents of the retrieved children on their own text with the same "
        "model (H-RAG's rank_parents = true) instead of taking their best child's score",
    )
    p.add_argument(
        "--rerank",
        help="reranker of the first stage's top --rerank-k: a cross-encoder, monoT5 or yes/no LLM reranker (alias, "
        "HF id or local folder; the recipe is read from its architecture), a multi-vector alias (MaxSim), or "
        "listwise:MODEL (an LLM ordering windows, with --reranker-base-url; docs/rerankers.md)",
    )
    p.add_argument("--rerank-k", type=positive_int, default=100, help="documents reranked per query [100]")
    p.add_argument(
        "--rerank-batch-size", type=positive_int, default=32, help="query-document pairs per cross-encoder batch [32]"
    )
    p.add_argument(
        "--reranker-base-url",
        metavar="URL",
        help="listwise:MODEL: OpenAI-compatible endpoint, or hf://MODEL_OR_PATH in-process (the rewriter's run "
        "flags apply: --api-key-env, --llm-cache, --yes, --timeout, --max-failure-rate) [env OPENAI_BASE_URL]",
    )
    p.add_argument(
        "--rerank-window", type=positive_int, default=20, help="listwise:MODEL: documents per LLM request [20]"
    )
    p.add_argument(
        "--rerank-stride", type=positive_int, help="listwise:MODEL: places each window moves up [half the window]"
    )


def _add_scoring_flags(p: argparse.ArgumentParser) -> None:
    """The evaluation protocol, cutoffs and measures."""
    p.add_argument(
        "--protocol",
        choices=["official", "trec_eval"],
        help="official: score (and serialize) as the benchmark's own evaluation code does, for the tasks of "
        f"a benchmark with one ({', '.join(OFFICIAL_PROTOCOLS)}; docs/protocols.md); trec_eval: mtrbench's "
        "trec_eval conventions [task card's]",
    )
    p.add_argument("--k", dest="k_values", help="metric cutoffs, comma separated [the task card's own cutoffs]")
    p.add_argument(
        "--metrics",
        help="measures (`mtrbench metrics`): strings like nDCG@10,R@100(rel=2), or family "
        "names expanded over --k [the task card's own measures]",
    )


def _add_model_source_and_output_flags(p: argparse.ArgumentParser) -> None:
    """Which revision of a Hub model may run, and where the result files (and a Task A file) go."""
    p.add_argument("--revision", help="model revision (commit) on the Hub")
    p.add_argument("--trust-remote-code", action="store_true", help="allow code from the model repository")
    p.add_argument("--output-dir", default="results", help="where result files go [results]")
    p.add_argument(
        "--mtrag-out",
        metavar="FILE.jsonl",
        help="also write the run as an MTRAGEval Task A prediction file (retrieval_taska: top 10 "
        "contexts a query, the format's limit), checked with MTRAG's format rules; one mtrag-*/"
        "mtragun-* task, one model, one history; score it with `mtrbench score --predictions`",
    )
    p.add_argument(
        "--ikat-out",
        metavar="FILE",
        help="also write the run as a TREC iKAT run file (the official JSON of the card's year; 2025: JSON "
        "lines): top 1000 passages a turn with their texts, the statements --ptkb added, no response text; "
        "checked with the organisers' structural checks; one ikat-* task, one model, one history",
    )
    p.add_argument(
        "--passage-db",
        metavar="DB",
        help="with --ikat-out: the organisers' passage-id database (sqlite) to check the passage ids against",
    )
