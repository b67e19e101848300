"""`mtrbench metrics`: the measure families, the names `--metrics` accepts, a definition and a citation."""

from __future__ import annotations

import argparse


def _cmd_metrics(args: argparse.Namespace) -> int:
    import json

    from rich.console import Console
    from rich.padding import Padding
    from rich.text import Text

    from mtrbench.measures import all_families  # deferred: loads pytrec_eval
    from mtrbench.measures.base import family_origin  # deferred: loads pytrec_eval

    rows = [
        {
            "family": f.name,
            "example": str(f.example()),
            "names": list(f.names()),
            "result_key": f.key(f.example(), 1),
            "relevance_level": f.uses_relevance_level,
            "per_query": f.per_query,
            "parameters": list(f.param_names),
            "definition": f.definition,
            "citation": f.citation,
            "origin": family_origin(f),
        }
        for f in all_families().values()
    ]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    # One block per family rather than a six-column table: definitions and citations are prose and wrap
    # at the terminal's width under the names one types.
    console = Console(highlight=False)
    console.print(
        Text(
            "measures: write NAME@K, add (rel=N) to binary ones; bare names expand over --k; "
            "generation measures (mtrbench judge) take no @K",
            style="bold",
        )
    )
    for row, f in zip(rows, all_families().values()):
        line = Text()
        line.append(
            row["example"] + (f"({','.join(p + '=...' for p in f.param_names)})" if f.param_names else ""),
            style="bold cyan",
        )
        line.append(f"  key {row['result_key']}")
        also = ", ".join(dict.fromkeys(n for n in row["names"] if n != f.label))
        if also:
            line.append(f"  also: {also}")
        if f.uses_relevance_level:
            line.append("  (rel=N)")
        console.print(line)
        console.print(Padding(Text(f.definition), (0, 0, 0, 4)))
        notes = [n for n in (f.citation, f"origin: {row['origin']}") if n]
        console.print(Padding(Text("; ".join(notes), style="dim"), (0, 0, 0, 4)))
    return 0
