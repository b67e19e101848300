"""What several command modules share: the registration protocol and flags used by more than one command."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from mtrbench.infra.errors import MtrbenchError

if TYPE_CHECKING:
    from mtrbench.analyses.run import AnalysisOptions

Handler = Callable[[argparse.Namespace], int]
# Every flags module (mtrbench.cli.flags) exposes ``register(subparsers: Subparsers) -> dict[str, str]``: it adds
# its parsers and returns each command name's handler as "module:function" (imported when the command runs).
Subparsers = argparse._SubParsersAction

# numba writes ANSI bold codes into its warning texts whatever the output is (`fuse` put them in a log):
# plain text unless the user asks for highlighting. Set before any command imports numba.
os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")


def add_data_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--split", help="split [the card's eval split]")
    p.add_argument("--data-dir", help="local copy of the task's data, laid out as published")
    p.add_argument("--corpus", help="external corpus, for tasks that do not ship one")


def unescape(text: str) -> str:
    return text.encode("utf-8").decode("unicode_escape") if "\\" in text else text


def add_analysis_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--refined-qrels", help="refined qrels (e.g. BRIDGE): scores on both, differences, BRIDGE Hole@k")
    p.add_argument(
        "--generation-judgments", help="per-query binary generation outcomes (JSONL qid/label or TSV) for RAGAlign"
    )
    p.add_argument("--ragalign-metric", default="hit_rate_at_10", help="binary retrieval metric for RAGAlign")
    p.add_argument("--ragalign-continuous", default="ndcg_at_10", help="metric for point-biserial RAGAlign")


def analysis_options(args: argparse.Namespace) -> AnalysisOptions:
    from mtrbench.analyses.run import AnalysisOptions  # deferred: loads pytrec_eval

    return AnalysisOptions(
        refined_qrels=args.refined_qrels,
        generation_judgments=args.generation_judgments,
        ragalign_metric=args.ragalign_metric,
        ragalign_continuous=args.ragalign_continuous,
    )


_SIZE_UNITS = {
    "": 1,
    "B": 1,
    "KB": 2**10,
    "MB": 2**20,
    "GB": 2**30,
    "TB": 2**40,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}


def parse_size(text: str, flag: str) -> int:
    """Bytes of a size like 8GB, 512MB or 1.5GiB (binary units either way)."""
    import re

    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", text or "")
    unit = match.group(2).upper() if match else ""
    if not match or unit not in _SIZE_UNITS or float(match.group(1)) <= 0:
        raise MtrbenchError(f"{flag} takes a size like 8GB or 512MB, got '{text}'")
    return int(float(match.group(1)) * _SIZE_UNITS[unit])
