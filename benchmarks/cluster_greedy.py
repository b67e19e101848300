"""Greedy traversal clustering (``mtrbench synthesize --stage cluster``) on synthetic embeddings, against a
naive all-pairs greedy walk measured in the same run.

Embeddings: a seeded mixture of Gaussian topics (n/50 centres, unit-normalised), ``--dim`` wide.
Times are wall and CPU seconds (on a shared machine wall time mostly measures the neighbours' load).
For each size, each method runs in its own child process so that its peak memory (ru_maxrss, the
embeddings included: their size is listed) is its own:

* ``graph``: mtrbench's stage: the kNN graph (``--knn``: exact torch top-k, or faiss HNSW for large
  corpora) plus the greedy walk with exact jumps, then the cut into clusters;
* ``naive``: from the same start, each step scores every chunk and takes the best unvisited one (O(n^2 d)).
  It runs for at most ``--naive-seconds``; a step costs the same throughout (a full scan), so its total
  is extrapolated linearly from the steps done, and reported as such. Its first steps are compared with
  the graph walk's (with an exact graph they must agree).

    python benchmarks/cluster_greedy.py --sizes 100000 1000000 --knn-large faiss-hnsw
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def synthetic_embeddings(n: int, dim: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    centres = torch.randn(max(1, n // 50), dim, generator=generator)
    topic = torch.randint(0, centres.shape[0], (n,), generator=generator)
    vectors = centres[topic] + 0.6 * torch.randn(n, dim, generator=generator)
    return torch.nn.functional.normalize(vectors, dim=1)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def run_graph(n: int, dim: int, neighbours: int, knn: str, seed: int, cluster_size: int) -> dict:
    from mtrbench.synthesize.cluster import cut, greedy_traversal, knn_graph

    vectors = synthetic_embeddings(n, dim, seed)
    start = int(np.random.default_rng(seed).integers(n))
    t0, c0 = time.perf_counter(), time.process_time()
    graph = knn_graph(vectors, neighbours, knn)
    t1, c1 = time.perf_counter(), time.process_time()
    walk = greedy_traversal(vectors, graph, start)
    clusters = cut(walk.path, cluster_size)
    t2, c2 = time.perf_counter(), time.process_time()
    assert sorted(walk.path) == list(range(n))
    return {
        "method": "graph",
        "knn": knn,
        "knn_s": round(t1 - t0, 2),
        "walk_s": round(t2 - t1, 2),
        "total_s": round(t2 - t0, 2),
        "knn_cpu_s": round(c1 - c0, 2),
        "walk_cpu_s": round(c2 - c1, 2),
        "cpu_s": round(c2 - c0, 2),
        "jumps": walk.jumps,
        "clusters": len(clusters),
        "peak_rss_mib": round(peak_rss_mib()),
        "path_head": walk.path[:2000],
    }


def run_naive(n: int, dim: int, seed: int, budget_s: float) -> dict:
    vectors = synthetic_embeddings(n, dim, seed)
    start = int(np.random.default_rng(seed).integers(n))
    visited = torch.zeros(n, dtype=torch.bool)
    path, current = [start], start
    visited[start] = True
    t0, c0 = time.perf_counter(), time.process_time()
    while len(path) < n and time.perf_counter() - t0 < budget_s:
        scores = vectors @ vectors[current]
        scores[visited] = float("-inf")
        current = int(torch.argmax(scores))
        visited[current] = True
        path.append(current)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    steps = len(path) - 1
    complete = len(path) == n
    scale = 1.0 if complete else (n - 1) / steps
    return {
        "method": "naive",
        "steps_done": steps,
        "measured_s": round(elapsed, 2),
        "complete": complete,
        "total_s": round(elapsed * scale, 1),
        "cpu_s": round(cpu * scale, 1),
        "extrapolated": not complete,
        "peak_rss_mib": round(peak_rss_mib()),
        "path_head": path[:2000],
    }


def child(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    if args.worker == "graph":
        result = run_graph(args.n, args.dim, args.neighbours, args.knn, args.seed, args.cluster_size)
    else:
        result = run_naive(args.n, args.dim, args.seed, args.naive_seconds)
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--neighbours", type=int, default=64)
    parser.add_argument("--cluster-size", type=int, default=8)
    parser.add_argument("--knn", default="exact", help="kNN backend up to --large [exact]")
    parser.add_argument("--knn-large", default="faiss-hnsw", help="kNN backend from --large chunks on [faiss-hnsw]")
    parser.add_argument("--large", type=int, default=500_000)
    parser.add_argument("--naive-seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads; 1 default: on a shared CPU more threads spin and measure noise [1]",
    )
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    parser.add_argument("--worker", choices=["graph", "naive"], help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        child(args)
        return
    rows = []
    for n in args.sizes:
        knn = args.knn if n < args.large else args.knn_large
        results = {}
        for worker in ("graph", "naive"):
            command = [
                sys.executable,
                __file__,
                "--worker",
                worker,
                "--n",
                str(n),
                "--dim",
                str(args.dim),
                "--neighbours",
                str(args.neighbours),
                "--cluster-size",
                str(args.cluster_size),
                "--knn",
                knn,
                "--naive-seconds",
                str(args.naive_seconds),
                "--seed",
                str(args.seed),
                "--threads",
                str(args.threads),
            ]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            results[worker] = json.loads(done.stdout.strip().splitlines()[-1])
        graph, naive = results["graph"], results["naive"]
        compared = min(len(graph["path_head"]), len(naive["path_head"]))
        agree = next((i for i in range(compared) if graph["path_head"][i] != naive["path_head"][i]), compared)
        for r in (graph, naive):
            r.pop("path_head")
        rows.append(
            {
                "n": n,
                "dim": args.dim,
                "embeddings_mib": round(n * args.dim * 4 / 2**20),
                "graph": graph,
                "naive": naive,
                "paths_agree_for_first_steps": agree,
                "speedup_wall": round(naive["total_s"] / graph["total_s"], 1),
                "speedup_cpu": round(naive["cpu_s"] / graph["cpu_s"], 1),
            }
        )
        extrapolated = f" (extrapolated from {naive['steps_done']:,} steps)" if naive["extrapolated"] else ""
        print(
            f"n={n:,} dim={args.dim} knn={knn}: graph {graph['total_s']} s wall / {graph['cpu_s']} s CPU (kNN "
            f"{graph['knn_cpu_s']} s, walk {graph['walk_cpu_s']} s CPU, {graph['jumps']:,} jumps), peak "
            f"{graph['peak_rss_mib']} MiB | naive {naive['total_s']} s wall / {naive['cpu_s']} s CPU{extrapolated}, "
            f"peak {naive['peak_rss_mib']} MiB | x{rows[-1]['speedup_cpu']} CPU | first {agree} steps agree",
            flush=True,
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = f"cluster-greedy-{platform.node() or 'host'}-cpu{args.threads}-{date.today()}.json"
    (out / name).write_text(
        json.dumps({"machine": platform.platform(), "threads": args.threads, "rows": rows}, indent=2) + "\n"
    )
    print(f"wrote {out / name}")


if __name__ == "__main__":
    main()
