"""`mtrbench tasks`: list the task cards, or show one with descriptive statistics."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from mtrbench.data import load_task, resolve_card
from mtrbench.data.cards import all_cards
from mtrbench.data.stats import task_stats
from mtrbench.infra.errors import MtrbenchError

if TYPE_CHECKING:
    pass


def _cmd_tasks(args: argparse.Namespace) -> int:
    import yaml
    from rich.console import Console

    console = Console()
    if args.action == "show":
        if not args.name:
            raise MtrbenchError("usage: mtrbench tasks show NAME")

        card = resolve_card(args.name)
        print(yaml.safe_dump(card.to_dict(), sort_keys=False, allow_unicode=True, width=100), end="")
        if args.stats:
            task = load_task(
                card, split=args.split, data_dir=args.data_dir, corpus_path=args.corpus, require_corpus=False
            )
            stats = task_stats(task, card.relevance_level)  # relevant as the card's binary measures count it
            print(yaml.safe_dump({"stats": stats}, sort_keys=False, width=100), end="")
        return 0
    from mtrbench.measures import label  # deferred: loads pytrec_eval
    from mtrbench.results.table import compact_table, print_titled  # deferred: loads pytrec_eval

    cards = list(all_cards().values())
    if args.family:
        families = sorted({card.format for card in cards})
        if args.family not in families:
            raise MtrbenchError(f"--family {args.family}: no such family; families: {', '.join(families)}")
        cards = [card for card in cards if card.format == args.family]
    if args.offline:
        cards = [card for card in cards if card.runs_offline()]
    table = compact_table()
    # the main score as a measure (nDCG@10, as --metrics takes it) leaves room for the origin within 80 columns
    table.add_column("name", no_wrap=True)
    table.add_column("split", no_wrap=True)
    table.add_column("main score", overflow="fold", max_width=10)
    table.add_column("offline", no_wrap=True)
    table.add_column("source", overflow="fold")
    table.add_column("origin", no_wrap=True)
    for card in cards:
        source = card.source.hub or f"(local) {card.source.path}"
        if card.source.hub and card.source.revision:
            source += f"@{card.source.revision[:7]}"
        table.add_row(
            card.name,
            card.eval_split,
            label(card.main_score),
            "yes" if card.runs_offline() else "no",
            source,
            card.origin,
        )
    chosen = " ".join(
        part
        for part in (f"family {args.family}" if args.family else "", "offline only" if args.offline else "")
        if part
    )
    print_titled(
        console,
        f"{len(cards)} tasks{' (' + chosen + ')' if chosen else ''}; offline: data on this machine "
        f"(else the Hub or --data-dir); source: Hub dataset@revision or local path; origin: "
        f"built-in or the plugin package",
        table,
    )
    return 0
