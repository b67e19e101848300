"""`mtrbench cache`'s flags; the handlers are in mtrbench/cli/encode.py, imported only when the command runs."""

from __future__ import annotations

from mtrbench.cli.common import Subparsers


def register(sub: Subparsers) -> dict[str, str]:
    p = sub.add_parser(
        "cache",
        help="list or remove cached corpus embeddings",
        description="Corpus embeddings are cached under $MTRBENCH_CACHE_DIR/embeddings "
        "(default ~/.cache/mtrbench/embeddings).",
    )
    p.add_argument("action", choices=["ls", "rm"])
    p.add_argument("key", nargs="?", help="rm: a cache key (a unique prefix is enough)")
    p.add_argument("--all", action="store_true", help="rm: every entry")
    p.add_argument(
        "--model", help="rm: every entry of this model: an alias (`mtrbench models`) or the name `cache ls` shows"
    )
    p.add_argument(
        "--cache-dir", help="embedding cache folder [$MTRBENCH_CACHE_DIR/embeddings or ~/.cache/mtrbench/embeddings]"
    )
    return {"cache": "mtrbench.cli.encode:_cmd_cache"}
