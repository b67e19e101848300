"""Late-interaction search on a synthetic ColBERT-shaped corpus: exact MaxSim over the whole corpus
(mtrbench.search.maxsim) against the voyager token index (mtrbench.search.token_index: HNSW over every
passage token, candidates scored by exact MaxSim).

Data: ``--docs`` passages (default 10,000) of 60-120 token vectors (dim 128), and ``--queries`` queries of 32
token vectors. Token vectors are clustered so the search is not trivially random: 4,096 unit centroids split
over 64 topics; a passage picks a topic and each of its tokens is one of that topic's centroids (Zipf-like)
plus Gaussian noise, normalized. A query takes a passage and draws 24 tokens near that passage's tokens and 8
near its topic's centroids. The same seed gives the same data.

The passages are written as the token store writes them (fp16 ``tokens.npy`` + int64 ``offsets.npy``) and each
method runs in its own subprocess that memory-maps them, so its peak RSS (VmHWM) is its own; "+MiB" is the
growth over the subprocess's RSS after loading (mapped pages read during search count, as they do in a run).
Reported: index build seconds, queries/s (all queries, top-100), peak RSS, recall@100 against exact MaxSim (the
fraction of exact top-100 passages found) at several query-time settings of one graph, and the store's bytes
per passage.

Prints a table and writes ``benchmarks/results/multivector_search.json`` (``--out DIR``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DIM, TOP_K, QUERY_TOKENS = 128, 100, 32
CENTROIDS, TOPICS = 4096, 64


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def synthetic(n_docs: int, n_queries: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(passage tokens fp16, offsets int64, query tokens (queries, 32, dim) fp32)."""
    rng = np.random.default_rng(seed)
    centroids = _unit(rng.standard_normal((CENTROIDS, DIM)))
    topic_members = rng.permutation(CENTROIDS).reshape(TOPICS, CENTROIDS // TOPICS)
    zipf = 1.0 / np.arange(1, CENTROIDS // TOPICS + 1)
    zipf /= zipf.sum()
    lengths = rng.integers(60, 121, n_docs)
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    topics = rng.integers(0, TOPICS, n_docs)
    owner_topic = np.repeat(topics, lengths)
    choice = rng.choice(CENTROIDS // TOPICS, size=int(offsets[-1]), p=zipf)
    tokens = np.empty((int(offsets[-1]), DIM), dtype=np.float16)
    for start in range(0, len(tokens), 500_000):
        end = min(start + 500_000, len(tokens))
        base = centroids[topic_members[owner_topic[start:end], choice[start:end]]]
        tokens[start:end] = _unit(base + 0.07 * rng.standard_normal((end - start, DIM)))
    queries = np.empty((n_queries, QUERY_TOKENS, DIM), dtype=np.float32)
    for q, doc in enumerate(rng.integers(0, n_docs, n_queries)):
        own = tokens[offsets[doc] : offsets[doc + 1]].astype(np.float32)
        near = own[rng.integers(0, len(own), 24)] + 0.07 * rng.standard_normal((24, DIM))
        topical = centroids[rng.choice(topic_members[topics[doc]], 8)] + 0.07 * rng.standard_normal((8, DIM))
        queries[q] = _unit(np.concatenate([near, topical]))
    return tokens, offsets, queries


def _status_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _peak_mib() -> float:
    """VmHWM, this address space's peak: ru_maxrss would carry over the forking parent's peak through exec."""
    return _status_mib("VmHWM")


def _rss_mib() -> float:
    return _status_mib("VmRSS")


def _reset_peak() -> None:
    """Linux: the peak RSS (VmHWM) starts again from the current RSS, so imports' peak is not the search's."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def child(data: Path, method: str, params: dict) -> None:
    """One method in this process: prints one JSON line."""
    import torch

    from mtrbench.encode.token_store import TokenMatrix
    from mtrbench.search.maxsim import QueryTokens, maxsim_search
    from mtrbench.search.token_index import TokenIndexSpec, VoyagerTokenIndex

    torch.set_num_threads(params.get("threads", 2))
    matrix = TokenMatrix(np.load(data / "tokens.npy", mmap_mode="r"), np.load(data / "offsets.npy"))
    queries_np = np.load(data / "queries.npy")
    queries = QueryTokens.of([torch.from_numpy(q) for q in queries_np])
    _reset_peak()
    base = _rss_mib()
    result: dict = {"method": method, "rss_after_load_mib": base}
    if method == "exact":
        began = time.perf_counter()
        scores, ids = maxsim_search(queries, matrix, TOP_K)
        result["search_s"] = time.perf_counter() - began
        np.save(data / "exact_ids.npy", ids.numpy())
        result["rows"] = [{"setting": "exact", "qps": len(queries) / result["search_s"], "recall@100": 1.0}]
    else:
        spec = TokenIndexSpec.parse(params["spec"])
        began = time.perf_counter()
        index = VoyagerTokenIndex(spec, matrix, threads=params.get("threads", 2))
        result["build_s"] = time.perf_counter() - began
        result["spec"] = spec.describe()
        exact = np.load(data / "exact_ids.npy")
        rows = []
        for k_tokens, ef in params["query_settings"]:
            view = index.searching(k_tokens=k_tokens, ef=ef)
            began = time.perf_counter()
            hits = view.search(queries, TOP_K)
            seconds = time.perf_counter() - began
            recall = np.mean([len(set(docs) & set(exact[q].tolist())) / TOP_K for q, (docs, _) in enumerate(hits)])
            rows.append(
                {"setting": f"k_tokens={k_tokens},ef={ef}", "qps": len(queries) / seconds, "recall@100": recall}
            )
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        result["rows"] = rows
    result["peak_rss_mib"] = _peak_mib()
    result["growth_mib"] = result["peak_rss_mib"] - base
    print(json.dumps(result))


def run_child(data: Path, method: str, params: dict) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(data), method, json.dumps(params)],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--index", default="voyager:m=8,ef_construction=40", help="the --index value measured [voyager: its defaults]"
    )
    parser.add_argument(
        "--settings", default="16:128,32:128,64:128,128:128", help="query-time k_tokens:ef pairs on the one graph"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), args.child[1], json.loads(args.child[2]))
        return 0
    from mtrbench.encode.token_store import TokenMatrix

    began = time.perf_counter()
    tokens, offsets, queries = synthetic(args.docs, args.queries, args.seed)
    matrix = TokenMatrix(tokens, offsets)
    shape = {
        "docs": args.docs,
        "tokens": matrix.n_tokens,
        "mean_tokens_per_passage": matrix.n_tokens / args.docs,
        "dim": DIM,
        "queries": args.queries,
        "query_tokens": QUERY_TOKENS,
        "store_bytes_per_passage": matrix.bytes_per_passage(),
        "store_mib": (tokens.nbytes + offsets.nbytes) / 2**20,
        "generate_s": time.perf_counter() - began,
    }
    print(json.dumps(shape), flush=True)
    pairs = [tuple(int(x) for x in pair.split(":")) for pair in args.settings.split(",")]
    with tempfile.TemporaryDirectory(prefix="mv-bench-") as folder:
        data = Path(folder)
        np.save(data / "tokens.npy", tokens)
        np.save(data / "offsets.npy", offsets)
        np.save(data / "queries.npy", queries)
        del tokens, matrix
        exact = run_child(data, "exact", {"threads": args.threads})
        print(json.dumps(exact), flush=True)
        index = run_child(data, "index", {"threads": args.threads, "spec": args.index, "query_settings": pairs})
        print(json.dumps(index), flush=True)
    print(f"\n{'method':<34}{'build s':>9}{'q/s':>9}{'recall@100':>12}{'peak MiB':>10}{'+MiB':>8}")
    for result in (exact, index):
        for row in result["rows"]:
            name = result["method"] if row["setting"] == "exact" else f"voyager {row['setting']}"
            build = f"{result['build_s']:.1f}" if "build_s" in result else "-"
            print(
                f"{name:<34}{build:>9}{row['qps']:>9.2f}{row['recall@100']:>12.4f}"
                f"{result['peak_rss_mib']:>10.0f}{result['growth_mib']:>8.0f}"
            )
    print(f"store: {shape['store_bytes_per_passage']:.0f} bytes per passage (fp16 tokens + offset)")
    report = {
        "benchmark": "multivector_search",
        "date": date.today().isoformat(),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "threads": args.threads,
        "load_average_at_end": os.getloadavg(),
        "data": shape,
        "exact": exact,
        "index": index,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "multivector_search.json").write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
