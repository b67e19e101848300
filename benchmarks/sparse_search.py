"""Learned sparse search at a million passages: exact sparse products (mtrbench.search.sparse_exact) against two
inverted-index libraries, pyseismic-lsr (``seismic``, approximate) and splade-index (``splade_index``).

Data: ``--docs`` synthetic SPLADE-shaped documents (default 1,000,000) over a 30,522-term vocabulary. Term ids
follow a Zipf-like law (p(rank) ~ 1 / (rank + 20), ranks shuffled over the vocabulary) and each document draws
``--doc-draws`` terms, duplicates merged (about 120 distinct terms); weights are log-normal (median 0.6, as
SPLADE's log-saturated activations). ``--queries`` queries (default 200) draw about 30 terms the same way. The
same seed gives the same data.

Each method runs in its own subprocess that loads the matrices from one npz file, so its peak RSS (ru_maxrss)
is its own; "+MiB" is the growth over the subprocess's RSS after loading the matrices (what the search itself
adds: an index, buffers). Reported per method: build seconds, queries/s (all queries, top-100), peak RSS, and
recall@100 against exact search (the fraction of exact top-100 documents found; exact's own ties at the 100th
place are counted as found either way).

Prints a table and writes ``benchmarks/results/sparse_search.json`` (``--out DIR``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VOCAB = 30_522
TOP_K = 100


def synthetic(n: int, draws: int, seed: int) -> sp.csr_matrix:
    """``n`` rows of Zipf-like term ids (duplicates merged) with log-normal weights, built in chunks."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(VOCAB, dtype=np.float64)
    law = 1.0 / (ranks + 20.0)
    cdf = np.cumsum(law / law.sum())
    term_of_rank = np.random.default_rng(12345).permutation(VOCAB).astype(np.int32)  # same vocabulary for all
    parts = []
    for start in range(0, n, 100_000):
        rows = min(100_000, n - start)
        terms = np.sort(term_of_rank[np.searchsorted(cdf, rng.random((rows, draws)))], axis=1)
        fresh = np.ones_like(terms, dtype=bool)
        fresh[:, 1:] = terms[:, 1:] != terms[:, :-1]
        counts = fresh.sum(1)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        weights = rng.lognormal(mean=np.log(0.6), sigma=0.7, size=int(indptr[-1])).astype(np.float32)
        parts.append(sp.csr_matrix((weights, terms[fresh], indptr), shape=(rows, VOCAB)))
    matrix = sp.vstack(parts, format="csr")
    matrix.indices = matrix.indices.astype(np.int32)
    return matrix


def _rss_mib() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mib() -> float:
    """This process's own high-water mark (VmHWM). ru_maxrss is not: Linux carries the parent's peak across
    fork and exec, so every child reported at least the parent's RSS after generating the data."""
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("VmHWM:")) / 1024


def run_exact(docs: sp.csr_matrix, queries: sp.csr_matrix, params: dict) -> dict:
    from mtrbench.search.sparse_exact import inverted, sparse_search

    started, cpu = time.perf_counter(), time.process_time()
    by_term = inverted(docs)  # what a retriever builds once per corpus
    build_s, build_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    started, cpu = time.perf_counter(), time.process_time()
    hits = sparse_search(queries, docs, TOP_K, by_term=by_term)
    return {
        "build_s": build_s,
        "build_cpu_s": build_cpu_s,
        "search_s": time.perf_counter() - started,
        "search_cpu_s": time.process_time() - cpu,
        "hits": [h[0] for h in hits],
    }


def run_seismic(docs: sp.csr_matrix, queries: sp.csr_matrix, params: dict) -> dict:
    """One index built with ``params["build"]``, searched once per ``params["search"]`` setting."""
    from mtrbench.search.inverted import InvertedSpec, SeismicSearcher

    build = ",".join(f"{k}={v}" for k, v in params.get("build", {}).items())
    started, cpu = time.perf_counter(), time.process_time()
    index = SeismicSearcher(InvertedSpec.parse(f"seismic:{build}"), docs)
    build_s, build_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    searches = []
    for setting in params["search"]:
        tuned = index.tuned(**setting)
        began, cpu = time.perf_counter(), time.process_time()
        hits = tuned.search(queries, TOP_K)
        searches.append(
            {
                "search_s": time.perf_counter() - began,
                "search_cpu_s": time.process_time() - cpu,
                "hits": [h[0] for h in hits],
                "settings": tuned.settings(),
            }
        )
    return {"build_s": build_s, "build_cpu_s": build_cpu_s, "searches": searches}


def run_splade_index(docs: sp.csr_matrix, queries: sp.csr_matrix, params: dict) -> dict:
    """splade-index scores term at a time into a dense per-query accumulator over all documents (exact); it
    encodes its corpus itself, so its arrays are set from the CSC matrix as its own index() would."""
    import splade_index

    started, cpu = time.perf_counter(), time.process_time()
    csc = docs.tocsc()
    index = splade_index.SPLADE(backend="numba" if params.get("numba") else "numpy")
    index.scores = {"data": csc.data, "indices": csc.indices, "indptr": csc.indptr, "num_docs": docs.shape[0]}
    index.unique_token_ids_set = set(np.flatnonzero(np.diff(csc.indptr)).tolist())
    del csc
    built, build_cpu_s, cpu = time.perf_counter(), time.process_time() - cpu, time.process_time()
    hits = []
    for row in range(queries.shape[0]):
        query = queries[row]
        _, ids = index._get_top_k_results(query.indices, query.data, k=TOP_K, sorted=True)
        hits.append([int(i) for i in ids])
    return {
        "build_s": built - started,
        "build_cpu_s": build_cpu_s,
        "search_s": time.perf_counter() - built,
        "search_cpu_s": time.process_time() - cpu,
        "hits": hits,
    }


METHODS = {"exact": run_exact, "seismic": run_seismic, "splade-index": run_splade_index}


def child(data: Path, method: str, params: dict) -> None:
    loaded = np.load(data, allow_pickle=False)
    docs = sp.csr_matrix((loaded["d_data"], loaded["d_indices"], loaded["d_indptr"]), shape=(int(loaded["n"]), VOCAB))
    queries = sp.csr_matrix(
        (loaded["q_data"], loaded["q_indices"], loaded["q_indptr"]), shape=(int(loaded["q"]), VOCAB)
    )
    del loaded
    baseline = _rss_mib()
    result = METHODS[method](docs, queries, params)
    result.update(peak_rss_mib=_peak_mib(), growth_mib=_peak_mib() - baseline, loaded_rss_mib=baseline)
    print(json.dumps(result))


DEFAULT_SEARCHES = (
    "query_cut=10,heap_factor=0.7,k_factor=1",
    "query_cut=20,heap_factor=0.9,k_factor=2",
    "query_cut=30,heap_factor=1.0,k_factor=2",
)


def _setting(text: str) -> dict:
    return {name: float(value) for name, value in (part.split("=") for part in text.split(",") if part)}


def recall(found: list[list[int]], exact: list[list[int]]) -> float:
    return float(np.mean([len(set(f) & set(e)) / max(1, len(e)) for f, e in zip(found, exact)]))


def run(data: Path, method: str, params: dict) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(data), method, json.dumps(params)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"{method} {params} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--doc-draws", type=int, default=125)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--query-draws", type=int, default=30)
    parser.add_argument("--seismic-build", help="seismic build settings (name=value,...) [the defaults]")
    parser.add_argument("--seismic-search", action="append", help="seismic search settings to measure (name=value,...)")
    parser.add_argument("--skip-splade-index", action="store_true")
    parser.add_argument("--skip-seismic", action="store_true", help="exact (and splade-index) only")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), args.child[1], json.loads(args.child[2]))
        return 0
    started = time.perf_counter()
    docs = synthetic(args.docs, args.doc_draws, seed=1)
    queries = synthetic(args.queries, args.query_draws, seed=2)
    shape = {
        "docs": docs.shape[0],
        "vocabulary": VOCAB,
        "doc_nnz_mean": docs.nnz / docs.shape[0],
        "query_nnz_mean": queries.nnz / queries.shape[0],
        "queries": queries.shape[0],
        "csr_mib": (docs.data.nbytes + docs.indices.nbytes + docs.indptr.nbytes) / 2**20,
        "dense_equivalent_gib": docs.shape[0] * VOCAB * 4 / 2**30,
        "generate_s": time.perf_counter() - started,
    }
    print(json.dumps(shape), flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        data = Path(work) / "data.npz"
        np.savez(
            data,
            d_data=docs.data, d_indices=docs.indices, d_indptr=docs.indptr, n=docs.shape[0],
            q_data=queries.data, q_indices=queries.indices, q_indptr=queries.indptr, q=queries.shape[0],
        )  # fmt: skip
        del docs
        settings = [_setting(text) for text in args.seismic_search or DEFAULT_SEARCHES]
        plans: list[tuple[str, dict]] = [("exact", {})]
        if not args.skip_seismic:
            plans.append(("seismic", {"build": _setting(args.seismic_build or ""), "search": settings}))
        if not args.skip_splade_index:
            plans.append(("splade-index", {}))
        exact_hits: list[list[int]] = []
        for method, params in plans:
            result = run(data, method, params)
            exact_hits = exact_hits or result["hits"]
            common = {k: v for k, v in result.items() if k not in ("hits", "searches", "search_s", "search_cpu_s")}
            for search in result.get("searches") or [result]:
                row = {
                    "method": method,
                    "params": search.get("settings") or params,
                    **common,
                    "search_s": search["search_s"],
                    "search_cpu_s": search.get("search_cpu_s"),
                    "queries_per_s": queries.shape[0] / search["search_s"],
                    "recall_at_100": recall(search["hits"], exact_hits),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    print(
        f"\n{'method':<14} {'params':<44} {'build s':>8} {'q/s':>8} {'cpu s':>7} {'peak MiB':>9} {'+MiB':>7} {'R@100':>7}"
    )
    for row in rows:
        params = row["params"].get("index", "-") if row["method"] == "seismic" else "-"
        print(
            f"{row['method']:<14} {params:<44} {row['build_s']:>8.1f} {row['queries_per_s']:>8.1f} "
            f"{row['search_cpu_s'] or 0:>7.1f} {row['peak_rss_mib']:>9.0f} {row['growth_mib']:>7.0f} "
            f"{row['recall_at_100']:>7.4f}"
        )
    report = {
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()} {os.cpu_count()} cores, shared with other engineers' jobs (load varies)",
        "load_average": os.getloadavg(),
        "top_k": TOP_K,
        "data": shape,
        "rows": rows,
        "seconds": time.perf_counter() - started,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "sparse_search.json"
    path.write_text(json.dumps(report, indent=1, allow_nan=False) + "\n")
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
