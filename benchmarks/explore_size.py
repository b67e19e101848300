"""How big `mtrbench explore`'s site gets: a synthetic task of 1,000 conversations x 10 turns, two systems (BM25
with history `current` and `full`, top-10 shown), against the targets site < 60 MB and list page < 2 MB.

The task is written in the native layout (``corpus.jsonl`` + ``conversations/test.jsonl``, invented words from a
seeded generator: 20,000 passages of about 120 words, user turns of about 12 words, verbose assistant turns of
about 50 words, one topic switch after turn 5) and read through the sample's card with ``--data-dir``. The two
results come from a real ``mtrbench eval``; the site from ``mtrbench explore``. Prints a table and writes JSON to
``benchmarks/results/explore-size-<host>-<date>.json`` (``--out DIR``); exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SITE_TARGET_MB = 60.0
LIST_TARGET_MB = 2.0
ROOT = Path(__file__).resolve().parents[1]


def words(rng: random.Random, vocabulary: list[str], n: int) -> str:
    return " ".join(rng.choice(vocabulary) for _ in range(n))


def write_task(folder: Path, conversations: int, turns: int, passages: int, seed: int) -> None:
    rng = random.Random(seed)
    vocabulary = ["".join(rng.choice("abcdefghiklmnoprstuvy") for _ in range(rng.randint(3, 9))) for _ in range(8000)]
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "corpus.jsonl").open("w") as out:
        for n in range(passages):
            row = {
                "_id": f"doc-{n:06d}",
                "title": words(rng, vocabulary, 3).title(),
                "text": words(rng, vocabulary, 120),
            }
            out.write(json.dumps(row) + "\n")
    (folder / "conversations").mkdir(exist_ok=True)
    with (folder / "conversations" / "test.jsonl").open("w") as out:
        for c in range(conversations):
            messages = []
            for _ in range(turns):
                relevant = rng.sample(range(passages), rng.randint(1, 2))
                qrels = [{"doc_id": f"doc-{d:06d}", "score": rng.choice([1, 2])} for d in relevant]
                question = words(rng, vocabulary, 12) + "?"
                messages.append({"role": "user", "content": question, "rewrite": question, "qrels": qrels})
                messages.append({"role": "assistant", "content": words(rng, vocabulary, 50) + "."})
            row = {"conversation_id": f"syn-{c:04d}", "switch_turn": turns // 2, "messages": messages}
            out.write(json.dumps(row) + "\n")


def mtrbench(*args: str, cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mtrbench.cli", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def measure(site: Path) -> dict[str, float | int]:
    pages = sorted((site / "conversations").glob("*.html"))
    sizes = [p.stat().st_size for p in pages]
    total = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
    return {
        "site_mb": round(total / 1e6, 2),
        "list_page_mb": round((site / "index.html").stat().st_size / 1e6, 3),
        "conversation_pages": len(pages),
        "page_kb_median": round(statistics.median(sizes) / 1e3, 1),
        "page_kb_max": round(max(sizes) / 1e3, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--passages", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="explore-size-") as scratch:
        work = Path(scratch)
        write_task(work / "synthetic", args.conversations, args.turns, args.passages, args.seed)
        data = ["--task", "mtrbench-sample", "--data-dir", str(work / "synthetic")]
        eval_s = mtrbench("eval", "--model", "bm25", "--history", "current,full", *data, "--quiet", cwd=work)
        explore_s = mtrbench("explore", "results", "-o", "site", "--data-dir", str(work / "synthetic"), cwd=work)
        sizes = measure(work / "site")
    record = {
        "benchmark": "explore_size",
        "date": datetime.date.today().isoformat(),
        "host": platform.node(),
        "python": platform.python_version(),
        "task": {"conversations": args.conversations, "turns": args.turns, "passages": args.passages},
        "systems": ["bm25 history=current", "bm25 history=full"],
        "top_k": 10,
        **sizes,
        "targets": {"site_mb": SITE_TARGET_MB, "list_page_mb": LIST_TARGET_MB},
        "eval_s": round(eval_s, 1),
        "explore_s": round(explore_s, 1),
    }
    rows = [
        ("site", f"{sizes['site_mb']} MB", f"< {SITE_TARGET_MB:g} MB", sizes["site_mb"] < SITE_TARGET_MB),
        (
            "list page",
            f"{sizes['list_page_mb']} MB",
            f"< {LIST_TARGET_MB:g} MB",
            sizes["list_page_mb"] < LIST_TARGET_MB,
        ),
        ("conversation page, median", f"{sizes['page_kb_median']} kB", "", True),
        ("conversation page, largest", f"{sizes['page_kb_max']} kB", "", True),
        ("mtrbench explore", f"{explore_s:.1f} s", "", True),
    ]
    print(f"{'what':<28} {'measured':>12} {'target':>10}  ok")
    for what, value, target, ok in rows:
        print(f"{what:<28} {value:>12} {target:>10}  {'yes' if ok else 'NO'}")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"explore-size-{platform.node() or 'host'}-{record['date']}.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {path}")
    return 0 if all(ok for *_, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
