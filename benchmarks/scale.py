"""Past one process: corpus encoding single-process vs on Ray (1 and 2 actors) in the same run, and
search peak memory vs corpus size (in memory vs streamed from the cache under --search-memory).

Encoding: a synthetic corpus (``--corpus-size``, default 200,000 passages of 8-40 words) encoded by a
tiny random-weight BERT (the offline MiniLM vocabulary; ``--hidden``, ``--layers``) through the real
embedding-cache path (blocks, shards, manifest), once per engine into a fresh cache: passages/s
wall-clock including Ray's actor start-up, the ratio to the first single-process row, and the minimum
cosine between each later run's embeddings and the first's. The single process runs twice, with torch's
default threads (all cores), or ``--single-threads T``; each Ray CPU actor runs one thread. On a
busy shared machine a multi-threaded run can be many times slower than a one-thread run (OpenMP
threads wait for each other's cores), so say which you ran.

Search: random fp32 embeddings (``--dim``) of growing size written as a cache entry; a subprocess
searches ``--queries`` queries for top-100 either in memory (all shards loaded, exact_search) or
streamed (``--search-memory``), and reports its peak RSS growth over its own baseline after imports.

Prints two tables and writes ``benchmarks/results/scale-<host>-<date>.json`` (``--out DIR``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # tiny_model: the same random-weight BERT the Ray tests use

WORDS = (
    "lake glacier bridge river moraine trough gneiss meltwater basin highland province ridge valley harbour "
    "ferry tunnel quarry granite delta estuary marsh canal lock weir mill forge tower"
).split()


def corpus(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40))) for _ in range(n)]


def encode_runs(args, work: Path) -> list[dict]:
    from tiny_model import make_tiny_model

    from mtrbench.encode.cache import CacheKey, EmbeddingCache, ShardLimits, corpus_fingerprint
    from mtrbench.encode.distributed import RayEncoder, RaySettings
    from mtrbench.encode.engine import EncodingEngine, EngineOptions
    from mtrbench.encode.towers import SENTENCE_TRANSFORMERS, TowerSpec, load_tower

    model = make_tiny_model(work / "tiny", hidden=args.hidden, layers=args.layers)
    texts = corpus(args.corpus_size)
    spec = TowerSpec(SENTENCE_TRANSFORMERS, str(model), local_files_only=True, max_length=64)
    options = EngineOptions()
    key = CacheKey(
        model="tiny",
        revision="bench",
        prompt="",
        pipeline={},
        normalize=True,
        max_length=64,
        dtype="fp32",
        corpus=corpus_fingerprint([str(i) for i in range(len(texts))], texts),
        n_docs=len(texts),
    )
    limits = ShardLimits(block=args.block)
    rows, reference = [], None
    threads = torch.get_num_threads()
    single = args.single_threads or threads
    runs = [
        (f"single, {single} thread{'s' if single > 1 else ''}", 0, single),
        ("ray, 1 worker", 1, 1),
        ("ray, 2 workers", 2, 1),
    ]
    for label, workers, n_threads in runs:
        cache = EmbeddingCache(work / f"cache-{label.replace(' ', '').replace(',', '-')}", limits=limits, lock_wait_s=0)
        torch.set_num_threads(n_threads)  # Ray's CPU actors get OMP_NUM_THREADS = their num_cpus = 1
        began = time.perf_counter()
        if workers:
            encode = RayEncoder(spec, options, RaySettings(workers=workers), "", True)
        else:
            engine = EncodingEngine(load_tower(spec, "cpu"), options)

            def encode(todo, sizes, on_chunk, engine=engine):
                return engine.encode(todo, "", True, chunk_sizes=sizes, on_chunk=on_chunk)

        embeddings, report = cache.load_or_encode(key, texts, encode)
        seconds = time.perf_counter() - began
        row = {
            "engine": label,
            "workers": workers,
            "threads_per_process": n_threads,
            "passages": len(texts),
            "seconds": round(seconds, 2),
            "passages_per_s": round(len(texts) / seconds, 1),
            "shards": report.shards,
        }
        if reference is None:
            reference = embeddings
        else:
            row["min_cosine_vs_single"] = round(float(F.cosine_similarity(embeddings, reference, dim=1).min()), 6)
        rows.append(row)
        torch.set_num_threads(threads)
        print(f"  {label}: {row['passages_per_s']:,.0f} passages/s ({seconds:.1f} s)", flush=True)
    for row in rows:
        row["ratio_to_single"] = round(row["passages_per_s"] / rows[0]["passages_per_s"], 3)
    return rows


PROBE = """
import json, sys, torch
from mtrbench.search.exact import exact_search
from mtrbench.search.streaming import ShardReader, entry_shards, stream_search
def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024

torch.set_num_threads(1)
folder, mode, memory, n_queries, dim = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
queries = torch.randn(n_queries, dim, generator=torch.Generator().manual_seed(9))
with open("/proc/self/clear_refs", "w") as handle:  # reset the high-water mark after imports
    handle.write("5")
baseline = status("VmRSS")
shards = entry_shards(folder)
if mode == "memory":
    docs = torch.cat([ShardReader(s).read(0, s.end - s.start) for s in shards])
    hits = exact_search(queries, docs, 100)
    ids = [h[0] for h in hits]
else:
    ids = stream_search(queries, shards, 100, memory)[1].tolist()
peak = status("VmHWM")
print(json.dumps({"growth": peak - baseline, "ids": ids}))
"""


def search_runs(args, work: Path) -> list[dict]:
    from mtrbench.encode.cache import CacheKey, EmbeddingCache, ShardLimits, corpus_fingerprint

    rows = []
    for n in [int(x) for x in args.search_sizes.split(",")]:
        gen = torch.Generator().manual_seed(n)
        docs = torch.randn(n, args.dim, generator=gen)
        ids = [str(i) for i in range(n)]
        key = CacheKey(
            model="random",
            revision=str(n),
            prompt="",
            pipeline={},
            normalize=False,
            max_length=0,
            dtype="fp32",
            corpus=corpus_fingerprint(ids, ids),
            n_docs=n,
        )

        def encode(todo, sizes, on_chunk, docs=docs):
            start = 0
            for i, size in enumerate(sizes):
                on_chunk(i, docs[start : start + size])
                start += size

        cache = EmbeddingCache(work / "search-cache", limits=ShardLimits(seconds=0, block=50_000), lock_wait_s=0)
        cache.load_or_encode(key, ids, encode, keep=False)
        folder = cache.entry_folder(key)
        del docs
        result = {
            "docs": n,
            "dim": args.dim,
            "embeddings_mib": round(n * args.dim * 4 / 2**20, 1),
            "search_memory_mib": round(args.search_memory / 2**20, 1),
        }
        runs = {}
        for mode in ("memory", "stream"):
            began = time.perf_counter()
            done = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    PROBE,
                    str(folder),
                    mode,
                    str(args.search_memory),
                    str(args.queries),
                    str(args.dim),
                ],
                capture_output=True,
                text=True,
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            if done.returncode:
                raise SystemExit(done.stderr[-2000:])
            runs[mode] = json.loads(done.stdout.strip().splitlines()[-1])
            result[f"{mode}_peak_growth_mib"] = round(runs[mode]["growth"] / 2**20, 1)
            result[f"{mode}_seconds"] = round(time.perf_counter() - began, 2)
        result["same_run"] = runs["memory"]["ids"] == runs["stream"]["ids"]
        rows.append(result)
        print(
            f"  {n:,} docs ({result['embeddings_mib']} MiB): in memory +{result['memory_peak_growth_mib']} MiB, "
            f"streamed +{result['stream_peak_growth_mib']} MiB, same run: {result['same_run']}",
            flush=True,
        )
        shutil.rmtree(folder)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus-size", type=int, default=200_000)
    parser.add_argument("--block", type=int, default=2_000, help="cache block (texts per Ray task) [2000]")
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--search-sizes", default="50000,100000,200000,400000")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=256)
    parser.add_argument("--search-memory", type=int, default=64 * 2**20, help="bytes [64 MiB]")
    parser.add_argument("--single-threads", type=int, help="torch threads of the single-process run [all cores]")
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 2, help="CPUs of the local Ray [all]")
    parser.add_argument("--search-only", action="store_true", help="skip the encoding runs (and Ray)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args()

    import ray

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    work = Path(tempfile.mkdtemp(prefix="mtrbench-scale-"))
    try:
        encoding = []
        if not args.search_only:
            ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
            print(
                f"encoding {args.corpus_size:,} synthetic passages (tiny BERT {args.layers}x{args.hidden})", flush=True
            )
            encoding = encode_runs(args, work)
            ray.shutdown()
        print("search peak RSS growth", flush=True)
        search = search_runs(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()
    report = {
        "benchmark": "scale",
        "date": date.today().isoformat(),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "load_average_at_end": [round(x, 2) for x in load],
        "torch": torch.__version__,
        "ray": ray.__version__,
        "args": vars(args),
        "encoding": encoding,
        "search": search,
    }
    print(f"\n{'engine':<20} {'passages/s':>11} {'ratio':>6} {'seconds':>8}")
    for row in encoding:
        print(
            f"{row['engine']:<20} {row['passages_per_s']:>11,.0f} {row['ratio_to_single']:>6.2f} {row['seconds']:>8.1f}"
        )
    print(f"\n{'docs':>9} {'emb MiB':>8} {'in-memory +MiB':>15} {'streamed +MiB':>14} {'cap MiB':>8} {'same run':>9}")
    for row in search:
        print(
            f"{row['docs']:>9,} {row['embeddings_mib']:>8} {row['memory_peak_growth_mib']:>15} "
            f"{row['stream_peak_growth_mib']:>14} {row['search_memory_mib']:>8} {str(row['same_run']):>9}"
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"scale-cpu{os.cpu_count()}-{date.today().isoformat()}{'-search' if args.search_only else ''}.json"
    path.write_text(json.dumps(report, indent=1, allow_nan=False) + "\n")
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
