"""`mtrbench metrics`: the measure families, the names `--metrics` accepts, a definition and a citation."""

from __future__ import annotations

import argparse

from mtrbench.cli.common import Handler, Subparsers


def register(sub: Subparsers) -> dict[str, Handler]:
    p = sub.add_parser("metrics", help="list measure families: accepted names, definition, citation")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    return {"metrics": _cmd_metrics}


def _cmd_metrics(args: argparse.Namespace) -> int:
    import json

    from rich.console import Console
    from rich.table import Table

    from mtrbench.measures import all_families

    rows = [{"family": f.name, "example": str(f.example()), "names": list(f.names()),
             "result_key": f.key(f.example(), 1), "relevance_level": f.uses_relevance_level,
             "per_query": f.per_query, "parameters": list(f.param_names), "definition": f.definition,
             "citation": f.citation} for f in all_families().values()]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    table = Table(title="measures: write NAME@K, add (rel=N) to binary ones; bare names expand over --k; "
                        "generation measures (mtrbench judge) take no @K",
                  title_justify="left")
    for column in ("measure", "also", "key", "rel", "definition", "citation"):
        table.add_column(column, overflow="fold", no_wrap=column in ("measure", "key"))
    for row, f in zip(rows, all_families().values()):
        table.add_row(row["example"] + (f"({','.join(p + '=...' for p in f.param_names)})" if f.param_names else ""),
                      ", ".join(n for n in row["names"] if n != f.label), row["result_key"],
                      "yes" if f.uses_relevance_level else "-", f.definition, f.citation)
    Console().print(table)
    return 0
