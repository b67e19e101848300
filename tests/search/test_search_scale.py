"""Search past one device: the tie rule, the exact merge of sharded top-k lists, streaming search in a
bounded footprint (peak RSS of a subprocess), and faiss indexes as an explicit, recorded approximation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from mtrbench.cli import main
from mtrbench.encode.cache import CacheKey, EmbeddingCache, ShardLimits, corpus_fingerprint
from mtrbench.infra.errors import MtrbenchError
from mtrbench.search.approximate import FaissIndex, IndexSpec
from mtrbench.search.exact import exact_search
from mtrbench.search.sharded import sharded_search, split_shards
from mtrbench.search.streaming import entry_shards, stream_search
from mtrbench.search.topk import merge_top, select_top

ROOT = Path(__file__).resolve().parents[2]


def reference_top(scores: np.ndarray, k: int) -> list[list[int]]:
    """Higher score first, equal scores by lower position: numpy's lexsort, keys last-major."""
    return [np.lexsort((np.arange(len(row)), -row))[:k].tolist() for row in scores]


def tied_corpus(n: int = 600, dim: int = 4, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Docs drawn from 7 distinct vectors, so every query's scores tie in large groups spread over the corpus
    (and over any shard boundary); small integers keep the dot products exact in float32."""
    gen = torch.Generator().manual_seed(seed)
    palette = torch.randint(-3, 4, (7, dim), generator=gen).float()
    docs = palette[torch.randint(0, 7, (n,), generator=gen)]
    queries = torch.randint(-3, 4, (9, dim), generator=gen).float()
    return queries, docs


def test_select_top_breaks_ties_by_lower_position_even_at_the_kth_place():
    queries, docs = tied_corpus()
    scores = queries @ docs.T
    for k in (1, 5, 37, 600, 1000):
        top_s, top_i = select_top(scores, torch.arange(docs.shape[0]), k)
        assert top_i.tolist() == reference_top(scores.numpy(), k)
        assert torch.equal(top_s, scores.gather(1, top_i))


def test_exact_search_follows_the_tie_rule_across_its_chunks():
    queries, docs = tied_corpus()
    hits = exact_search(queries, docs, top_k=50, query_chunk=4, doc_chunk=64)
    assert [ids for ids, _ in hits] == reference_top((queries @ docs.T).numpy(), 50)


def test_merging_per_part_top_k_equals_the_whole_including_ties():
    queries, docs = tied_corpus()
    scores = queries @ docs.T
    cuts = [0, 97, 98, 300, 451, 600]  # uneven parts, one of a single document
    parts = [select_top(scores[:, a:b], torch.arange(a, b), 40) for a, b in zip(cuts, cuts[1:])]
    _, ids = merge_top(parts[::-1], 40)  # the order parts arrive in does not matter
    assert ids.tolist() == reference_top(scores.numpy(), 40)


def write_entry(root: Path, docs: torch.Tensor, shard_docs: int, dtype: str = "fp32") -> Path:
    """A complete cache entry of ``docs`` in shards of ``shard_docs`` rows, written by the cache itself."""
    n = docs.shape[0]
    ids = [str(i) for i in range(n)]
    key = CacheKey(
        model="m",
        revision="r",
        prompt="",
        pipeline={},
        normalize=False,
        max_length=8,
        dtype=dtype,
        corpus=corpus_fingerprint(ids, ids),
        n_docs=n,
    )

    def encode(todo, sizes, on_chunk):
        start = 0
        for i, size in enumerate(sizes):
            on_chunk(i, docs[start : start + size])
            start += size

    cache = EmbeddingCache(root, limits=ShardLimits(seconds=0, block=shard_docs), lock_wait_s=0)
    cache.load_or_encode(key, ids, encode, keep=False)
    return cache.entry_folder(key)


def test_sharded_search_over_cache_shards_equals_single_device_search_with_ties(tmp_path):
    queries, docs = tied_corpus()
    shards = entry_shards(write_entry(tmp_path, docs, shard_docs=70))  # 9 shards, ties cross every boundary
    assert len(shards) == 9
    expected = exact_search(queries, docs, top_k=60)
    for workers in (1, 2, 4, 9):
        groups = split_shards(shards, workers)
        assert [s for g in groups for s in g] == shards and len(groups) == workers
        scores, ids = sharded_search(queries, shards, 60, workers)
        assert [(i, s) for i, s in zip(ids.tolist(), scores.tolist())] == expected
    # and a tiny memory cap: pieces of a few rows inside each worker
    scores, ids = sharded_search(queries, shards, 60, 3, memory_bytes=2_000)
    assert ids.tolist() == [i for i, _ in expected]


def test_streaming_reads_bf16_shards_exactly(tmp_path):
    gen = torch.Generator().manual_seed(1)
    docs = torch.randn(500, 16, generator=gen).to(torch.bfloat16)
    queries = torch.randn(5, 16, generator=gen)
    shards = entry_shards(write_entry(tmp_path, docs, shard_docs=128, dtype="bf16"))
    scores, ids = stream_search(queries, shards, 20, memory_bytes=10_000)
    expected = reference_top((queries @ docs.float().T).numpy(), 20)
    assert ids.tolist() == expected


CAP = 32 * 2**20  # --search-memory of the subprocess
# queries, results, allocator slack and the memory-mapped shard pages still resident (file-backed, counted in
# RSS): growth measured 39-44 MiB on the idle 2-core box and 56.5 MiB once under CI's two busy workers. The cap
# plus this stays far below the 128 MiB a search holding the whole matrix would add.
CONSTANT = 40 * 2**20
# Peak RSS from the kernel's high-water mark, reset after imports (writing 5 to clear_refs): getrusage's
# ru_maxrss would also carry the parent's size across fork+exec and hide the search's own growth.
RSS_SCRIPT = """
import json, sys, torch
from mtrbench.search.streaming import entry_shards, stream_search

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024

torch.set_num_threads(1)
queries = torch.load(sys.argv[2])
with open("/proc/self/clear_refs", "w") as handle:
    handle.write("5")
baseline = status("VmRSS")
scores, ids = stream_search(queries, entry_shards(sys.argv[1]), 10, int(sys.argv[3]))
peak = status("VmHWM")
print(json.dumps({"baseline": baseline, "peak": peak, "ids": ids.tolist(), "scores": scores.tolist()}))
"""


def test_streaming_search_of_four_times_the_cap_stays_under_it_and_equals_in_memory_search(tmp_path):
    gen = torch.Generator().manual_seed(2)
    docs = torch.randn(4 * CAP // (256 * 4), 256, generator=gen)  # 128 MiB of fp32 embeddings
    queries = torch.randn(32, 256, generator=gen)
    folder = write_entry(tmp_path / "cache", docs, shard_docs=40_000)
    torch.save(queries, tmp_path / "queries.pt")  # our own file, written just above
    expected = exact_search(queries, docs, top_k=10)
    del docs
    done = subprocess.run(
        [sys.executable, "-c", RSS_SCRIPT, str(folder), str(tmp_path / "queries.pt"), str(CAP)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["ids"] == [ids for ids, _ in expected]
    np.testing.assert_allclose(out["scores"], [s for _, s in expected], rtol=1e-5)
    growth = out["peak"] - out["baseline"]
    assert growth <= CAP + CONSTANT, f"peak RSS grew by {growth / 2**20:.1f} MiB"
    assert growth >= CAP / 4  # the measure sees the search's pieces (a broken measure reads ~0)


# -- faiss ------------------------------------------------------------------------------------------


def normalized(n: int, dim: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(n, dim, generator=gen), dim=1)


def test_index_syntax():
    assert IndexSpec.parse(None).approximate is False and IndexSpec.parse("exact").kind == "exact"
    spec = IndexSpec.parse("faiss:IVF-Flat,nlist=64,nprobe=8")
    assert (spec.kind, spec.params, spec.approximate) == ("ivf-flat", {"nlist": 64, "nprobe": 8}, True)
    assert IndexSpec.parse("faiss:hnsw,m=16").describe() == "faiss:hnsw,m=16"
    for bad in ("faiss", "faiss:lsh", "faiss:hnsw,nlist=4", "faiss:ivf-pq,m=0", "annoy:x", "faiss:hnsw,m=x"):
        with pytest.raises(MtrbenchError):
            IndexSpec.parse(bad)


def test_ivf_flat_probing_every_list_equals_exact_search():
    docs, queries = normalized(2000, 32, 3), normalized(40, 32, 4)
    index = FaissIndex(IndexSpec.parse("faiss:ivf-flat,nlist=16,nprobe=16"), docs)
    scores, ids = index.search(queries, 10)
    expected = exact_search(queries, docs, 10)
    assert ids.tolist() == [i for i, _ in expected]
    np.testing.assert_allclose(scores.numpy(), [s for _, s in expected], rtol=1e-5, atol=1e-6)


def recall_at_10(ids: torch.Tensor, expected) -> float:
    return float(np.mean([len(set(row) & set(e)) / 10 for row, (e, _) in zip(ids.tolist(), expected)]))


def test_hnsw_and_ivf_pq_recall_against_exact_search():
    docs, queries = normalized(2000, 32, 5), normalized(50, 32, 6)
    expected = exact_search(queries, docs, 10)
    _, hnsw = FaissIndex(IndexSpec.parse("faiss:hnsw,m=16,ef_search=128"), docs).search(queries, 10)
    assert recall_at_10(hnsw, expected) >= 0.95
    _, few = FaissIndex(IndexSpec.parse("faiss:ivf-flat,nlist=32,nprobe=1"), docs).search(queries, 10)
    assert recall_at_10(few, expected) < 0.95  # one list of 32 really is approximate
    _, pq = FaissIndex(IndexSpec.parse("faiss:ivf-pq,nlist=8,nprobe=8,m=8,nbits=6"), docs).search(queries, 10)
    assert 0.2 <= recall_at_10(pq, expected) < 1.0  # compressed codes: approximate, far from random (0.005)


def test_eval_with_a_faiss_index_marks_the_results_approximate(tmp_path, native_mini, minilm):
    args = [
        "eval",
        "--model",
        "minilm",
        "--task",
        str(native_mini),
        "--device",
        "cpu",
        "--history",
        "rewrite",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--quiet",
    ]
    assert main([*args, "--index", "faiss:ivf-flat,nlist=2,nprobe=2", "--output-dir", str(tmp_path / "ivf")]) == 0
    assert main([*args, "--output-dir", str(tmp_path / "exact")]) == 0
    results = {}
    for name in ("ivf", "exact"):
        [path] = [p for p in (tmp_path / name).rglob("*.json") if p.name != "model_meta.json"]
        results[name] = json.loads(path.read_text())["mtrbench"]
    assert results["ivf"]["settings"]["retriever"]["search"] == {
        "index": "faiss:ivf-flat",
        "params": {"nlist": 2, "nprobe": 2},
        "approximate": True,
    }
    assert results["exact"]["settings"]["retriever"]["search"]["approximate"] is False
    assert "index=faiss:ivf-flat,nlist=2,nprobe=2" in results["ivf"]["experiment"]
    assert "index=" not in results["exact"]["experiment"]
    # every list probed: the same run as exact search
    runs = {name: list((tmp_path / name).rglob("*.run.trec"))[0].read_text().split("\n") for name in results}
    assert [line.split()[:3] for line in runs["ivf"] if line] == [line.split()[:3] for line in runs["exact"] if line]


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--search-memory", "lots"], r"--search-memory takes a size like 8GB"),
        (["--ray-workers", "2"], r"--ray-workers goes with --ray"),
        (["--ray", "--ray-address", "auto"], r"either --ray"),
        (["--index", "faiss:lsh"], r"unknown faiss index 'lsh'"),
        (["--search-memory", "1GB", "--no-cache"], r"drop --no-cache"),
        (["--index", "faiss:hnsw", "--search-memory", "1GB"], r"does not combine"),
    ],
)
def test_bad_scale_flags_are_one_error_line(flags, message, tmp_path, native_mini, minilm, capsys):
    import re

    code = main(
        [
            "eval",
            "--model",
            "minilm",
            "--task",
            str(native_mini),
            "--device",
            "cpu",
            "--quiet",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--output-dir",
            str(tmp_path / "out"),
            *flags,
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert re.search(message, err), err


def test_streamed_search_is_the_same_result_for_skips_and_leaderboard_identity(tmp_path, native_mini, minilm, capsys):
    """How exact search ran (in memory or streamed under a cap) changes neither the run nor the result's identity:
    a streamed rerun of a finished in-memory result is skipped as finished, and two such results are one
    leaderboard entry; an approximate index is a different result (its own folder, never skipped as exact)."""
    from mtrbench.leaderboard.keys import score_settings

    out = tmp_path / "results"
    args = [
        "eval",
        "--model",
        "minilm",
        "--task",
        str(native_mini),
        "--device",
        "cpu",
        "--history",
        "rewrite",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--output-dir",
        str(out),
        "--quiet",
    ]
    assert main(args) == 0
    [exact] = [p for p in out.rglob("native-mini.json")]
    in_memory = json.loads(exact.read_text())["mtrbench"]
    capsys.readouterr()
    assert main([*args, "--search-memory", "1MB"]) == 0
    assert "note: skipped" in capsys.readouterr().err  # finished with the same settings
    assert main([*args, "--search-memory", "1MB", "--overwrite-strategy", "always"]) == 0
    streamed = json.loads(exact.read_text())["mtrbench"]
    assert streamed["settings"]["retriever"]["search_execution"]["mode"] == "streaming"
    assert in_memory["settings"]["retriever"]["search_execution"]["mode"] == "in-memory"
    assert score_settings(streamed) == score_settings(in_memory)  # one identity on a leaderboard
    assert main([*args, "--index", "faiss:ivf-flat,nlist=2,nprobe=1"]) == 0
    assert "note: skipped" not in capsys.readouterr().err
    assert len(list(out.rglob("native-mini.json"))) == 2
