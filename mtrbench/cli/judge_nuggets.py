"""`mtrbench judge nuggets`: nugget evaluation (TREC RAG 2024/2025, TREC iKAT 2024) of generated answers, or of
existing nuggetizer assignment files. The parser here; the command's work in ``judge_nuggets_run``."""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    from mtrbench.cli import judge_nuggets_run  # deferred: loads pytrec_eval (the scores' per-turn breakdowns)

    return judge_nuggets_run.run(args)
