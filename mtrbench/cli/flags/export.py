"""`mtrbench export`'s flags; the handlers are in mtrbench/cli/export.py, imported only when the command runs."""

from __future__ import annotations

from mtrbench.cli.common import Subparsers, add_data_options
from mtrbench.cli.flag_types import positive_int
from mtrbench.cli.flags.models import add_model_kind


def register(sub: Subparsers) -> dict[str, str]:
    p = sub.add_parser(
        "export",
        help="write a task as BEIR files or a Hub-ready Hugging Face dataset",
        description="Each query's text is serialized as `mtrbench eval` serializes it (--history and "
        "the query-format options) and truncated as eval truncates it for --model, so "
        "beir's and mteb's own retrievers score the export as mtrbench scores the task. "
        "Without --model, --truncate none must be given: the texts are then written whole, "
        "and the export records and prints that.",
    )
    p.add_argument("task")
    p.add_argument("--format", required=True, choices=["beir", "hf"])
    p.add_argument("--out", required=True)
    add_data_options(p)
    p.add_argument(
        "--history",
        default="full",
        help="current | full | window:K | questions | last-response | rewrite | reasoning | full+reasoning "
        "[full, as eval]",
    )
    p.add_argument(
        "--model",
        help="truncate each query as `mtrbench eval --model M` does (its tokenizer, max length "
        "and query prompt; the prompt itself is not written); the model the export will be "
        "scored with",
    )
    add_model_kind(p)
    p.add_argument(
        "--max-length", type=positive_int, help="with --model: token limit, as eval's --max-length [model's]"
    )
    p.add_argument(
        "--truncate",
        choices=["left", "right", "none"],
        help="with --model: as eval's --truncate [left]; without --model: none, required, to write the "
        "texts whole (a retriever with a token limit then cuts them itself)",
    )
    p.add_argument("--user-prefix", default="User: ")
    p.add_argument("--assistant-prefix", default="Agent: ")
    p.add_argument("--separator", default="\\n", help="between messages (escapes like \\n allowed) [\\n]")
    p.add_argument("--order", default="history-first", choices=["history-first", "current-first"])
    p.add_argument(
        "--protocol",
        metavar="NAME",
        help="official or trec_eval, as eval's --protocol: the texts follow its serialization (MTR-SUITE's "
        "official one writes a first turn as 'User: q'); beir or mteb then score them with "
        "trec_eval's conventions [the task card's default]",
    )
    return {"export": "mtrbench.cli.export:_cmd_export"}
