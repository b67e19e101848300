"""`mtrbench explore RESULT [RESULT ...] -o DIR [--open]`: a static site to look at systems turn by turn."""

from __future__ import annotations

import argparse
import webbrowser
from pathlib import Path

from mtrbench.explore.options import ExploreOptions
from mtrbench.explore.systems import load_systems
from mtrbench.infra.errors import UserInputError


def _cmd_explore(args: argparse.Namespace) -> int:
    from mtrbench.explore.site import TaskSource, write_site  # deferred: loads pytrec_eval (measure names)

    if args.top_k < 1:
        raise UserInputError("--top-k must be at least 1")
    if args.snippet_chars < 1:
        raise UserInputError("--snippet-chars must be at least 1")
    output = Path(args.output)
    if output.exists() and not output.is_dir():
        raise UserInputError(f"-o {output}: not a folder")
    systems = load_systems(args.results)
    report = write_site(
        systems,
        output,
        ExploreOptions(top_k=args.top_k, snippet_chars=args.snippet_chars),
        TaskSource(args.data_dir, args.corpus),
    )
    print(
        f"{report.conversations} conversation pages for {len(systems)} system(s) "
        f"({', '.join(s.name for s in systems)}), {report.pages_bytes / 1e6:.1f} MB"
    )
    print(f"wrote {report.index}")
    if args.open:
        webbrowser.open(report.index.resolve().as_uri())
    return 0
