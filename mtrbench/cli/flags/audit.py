"""`mtrbench audit`'s flags; the handlers are in mtrbench/cli/audit.py, imported only when the command runs."""

from __future__ import annotations

from mtrbench.audit.defaults import DEFAULT_MAX_DOC_CHARS, DEFAULT_NEGATIVES, DIMENSIONS
from mtrbench.cli.common import Subparsers
from mtrbench.cli.flag_types import conversation_limit, non_negative_int, positive_int, seed
from mtrbench.cli.flags.llm import add_llm_arguments


def register(sub: Subparsers) -> dict[str, str]:
    p = sub.add_parser(
        "audit",
        help="MTR-EVAL: audit a task's gold labels with LLM judges",
        description="MTR-EVAL (MTR-SUITE §3): rate query-evidence alignment, evidence completeness "
        "(discriminability test against hard negatives), answer faithfulness and answer "
        "quality with one or more LLM judges. Resumable: a re-run asks only what the "
        "log in --output-dir has not answered.",
    )
    p.add_argument("task", help="task name (`mtrbench tasks`), card YAML or data folder")
    p.add_argument("--split", help="split [the card's eval split]")
    p.add_argument("--data-dir", help="local copy of the task's data, laid out as published")
    p.add_argument("--corpus", help="external corpus, for tasks that do not ship one")
    p.add_argument("--dimensions", help=f"comma list of {','.join(DIMENSIONS)} [all the task's data supports]")
    p.add_argument(
        "--negatives",
        type=positive_int,
        default=DEFAULT_NEGATIVES,
        help=f"hard negatives shown beside the gold document (completeness) [{DEFAULT_NEGATIVES}]",
    )
    p.add_argument(
        "--negatives-model",
        default="bm25",
        help="retriever for hard negatives: any `mtrbench models` alias, HF id or folder [bm25]",
    )
    p.add_argument("--negatives-run", help="take hard negatives from this TREC run instead (top-ranked non-gold)")
    p.add_argument(
        "--negatives-history",
        default="full",
        help="history strategy for the negatives retriever's queries (see `mtrbench eval`) [full]",
    )
    p.add_argument("--device", default="auto", help="device of a dense negatives retriever [auto]")
    p.add_argument("--seed", type=seed, default=0, help="query sample and candidate order seed [0]")
    p.add_argument(
        "--limit",
        type=conversation_limit,
        metavar="N",
        help="only the first N conversations (file order), as eval [all]",
    )
    p.add_argument(
        "--sample", type=positive_int, metavar="N", help="audit a seeded sample (--seed) of N queries with gold [all]"
    )
    p.add_argument(
        "--max-doc-chars",
        type=non_negative_int,
        default=DEFAULT_MAX_DOC_CHARS,
        help=f"cut each document shown to a judge to this many characters, 0 = never [{DEFAULT_MAX_DOC_CHARS}]",
    )
    p.add_argument("--output-dir", help="where the log and results go [results/audit/<task>]")
    p.add_argument(
        "--human-scores",
        help="JSONL/CSV of human scores per instance: Pearson r per dimension and judge (format in the README)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    add_llm_arguments(p)
    return {"audit": "mtrbench.cli.audit:_cmd_audit"}
