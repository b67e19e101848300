"""`mtrbench cache ls|rm`: the on-disk corpus embedding cache."""

from __future__ import annotations

import argparse
from pathlib import Path

from mtrbench.infra.errors import MtrbenchError, UserInputError
from mtrbench.infra.locking import is_held
from mtrbench.retrieve.registry import recorded_names


def _cmd_cache(args: argparse.Namespace) -> int:
    if args.cache_dir and Path(args.cache_dir).exists() and not Path(args.cache_dir).is_dir():
        raise UserInputError(f"--cache-dir {args.cache_dir} is a file, not the cache folder")
    from mtrbench.encode.cache import EmbeddingCache  # deferred: loads torch

    cache = EmbeddingCache(args.cache_dir)
    if args.action == "ls":
        return _list(cache)
    chosen = [x for x in (args.key, args.all or None, args.model) if x]
    if len(chosen) != 1:
        raise MtrbenchError("usage: mtrbench cache rm KEY | --all | --model MODEL (exactly one)")
    if args.model:
        names = recorded_names(args.model)
        entries = [e for e in cache.select(everything=True) if e.model in names]
    else:
        entries = cache.select(key=args.key, everything=args.all)
    if not entries and not args.all:
        what = f"key '{args.key}'" if args.key else f"model '{args.model}'"
        raise MtrbenchError(f"no cache entry for {what} under {cache.root} (see `mtrbench cache ls`)")
    removed = cache.remove(entries)
    freed = sum(e.size_bytes for e in entries if not e.path.exists())
    print(f"removed {removed} cache entr{'y' if removed == 1 else 'ies'} ({_size(freed)}) from {cache.root}")
    return 0


def _list(cache) -> int:
    from rich.console import Console

    from mtrbench.results.table import compact_table, print_titled  # deferred: loads pytrec_eval

    entries = cache.entries()
    console = Console()
    if not entries:
        console.print(f"no cached embeddings under {cache.root}", soft_wrap=True)
        return 0
    table = compact_table()
    table.add_column("key", no_wrap=True)
    table.add_column("model", overflow="fold", min_width=12)
    for column in ("docs", "dtype", "size", "date", "state"):
        table.add_column(column, no_wrap=True, justify="right" if column in ("docs", "size") else "left")
    for entry in entries:
        fields = entry.manifest.get("fields", {})
        date = entry.manifest.get("updated") or entry.manifest.get("created") or ""
        table.add_row(
            entry.key[:12],
            entry.model,
            f"{fields.get('n_docs', 0):,}",
            str(fields.get("dtype", "?")),
            _size(entry.size_bytes),
            date[:10],
            _state(entry),
        )
    print_titled(console, f"cached corpus embeddings in {cache.root}", table)
    console.print(
        f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}, {_size(sum(e.size_bytes for e in entries))}",
        soft_wrap=True,
    )
    return 0


def _state(entry) -> str:
    from mtrbench.encode.cache import LOCK_FILE, MANIFEST_FORMAT  # deferred: loads torch

    if entry.manifest.get("format") != MANIFEST_FORMAT:
        return "old format"  # encoded again (in place) by the next run that needs it
    if is_held(entry.path / LOCK_FILE):
        return "writing"
    return "ok" if entry.manifest.get("complete") else "partial"


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"
