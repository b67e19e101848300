"""`mtrbench qrels agree A B`: Cohen's kappa, confusion matrices and system-ranking agreement of two qrels files."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from mtrbench.infra.atomic import atomic_write_text, ensure_parent
from mtrbench.infra.numeric import json_text

if TYPE_CHECKING:
    from mtrbench.analyses.qrels_agreement import QrelsAgreement


def _cmd_qrels(args: argparse.Namespace) -> int:
    if args.qrels_command is None:
        args.qrels_parser.print_help()
        return 0
    return _cmd_agree(args)


def _cmd_agree(args: argparse.Namespace) -> int:
    from mtrbench.analyses.qrels_agreement import AgreeOptions, agree  # deferred: loads numpy

    if args.output:
        ensure_parent(args.output)
    options = AgreeOptions(
        first=args.first,
        second=args.second,
        threshold=args.threshold,
        runs=tuple(args.runs),
        measure=args.measure,
        relevance_level=args.relevance_level,
        second_is_human=args.human_labels,
        alpha=args.alpha,
    )
    result = agree(options)
    _print(result)
    if args.output:
        atomic_write_text(args.output, json_text(result.as_dict(), path=args.output, indent=2) + "\n")
    return 0


def _kappa(value: float | None) -> str:
    return "undefined (one label everywhere)" if value is None else f"{value:.3f}"


def _print(result: QrelsAgreement) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=100, soft_wrap=True)
    console.print(
        f"A = {result.first}: {result.pairs_first} pairs; B = {result.second}: {result.pairs_second} pairs; "
        f"shared {result.shared} (only A {result.only_first}, only B {result.only_second})"
    )
    for title, part in (
        (f"binary (relevant = grade >= {result.threshold})", result.binary),
        ("graded", result.graded),
    ):
        console.print(
            f"Cohen's kappa, {title}: {_kappa(part.kappa)} (agreement {part.observed:.3f}, by chance {part.expected:.3f})"
        )
        table = Table(show_edge=False, pad_edge=False)
        table.add_column("A \\ B", justify="right")
        for label in part.labels:
            table.add_column(str(label), justify="right")
        for label, row in zip(part.labels, part.confusion):
            table.add_row(str(label), *(str(n) for n in row))
        console.print(table)
    if result.ranking is not None:
        r = result.ranking
        console.print(
            f"system ranking by {result.ranking_measure} ({len(r.systems)} runs): Kendall tau-b {r.kendall_tau:.3f} "
            f"(p {r.kendall_p:.3g}), tau_AP {r.tau_ap:.3f}, {len(r.swapped)} swapped pair(s)"
        )
        for pair in r.swapped:
            console.print(
                f"  swapped: {pair.a} vs {pair.b}: {pair.diff_first:+.4f} under A, {pair.diff_second:+.4f} under B"
            )
    for name, estimate in result.ppi.items():
        level = f"{estimate.confidence:.0%}"
        console.print(
            f"{name} over A's {estimate.items} pairs: A alone {estimate.llm_mean:.4f}; PPI {estimate.ppi_mean:.4f} "
            f"[{estimate.ppi_low:.4f}, {estimate.ppi_high:.4f}] ({level}, {estimate.labelled} labelled by B); "
            f"B alone {estimate.human_mean:.4f} [{estimate.human_low:.4f}, {estimate.human_high:.4f}]"
        )
