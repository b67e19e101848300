"""CI smoke run of benchmarks/encode_throughput.py --cpu: it runs, writes strict JSON, and the engine's
embeddings agree with sentence-transformers'. Speed is the benchmark's business, not a test's.

encode_throughput.py runs in this process (its ``main(argv)``), which spares a subprocess's 12 s of imports
per run; benchmarks/scale.py starts Ray workers and keeps its own process."""

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import CliRun, captured

pytestmark = pytest.mark.slow  # every test here is an end-to-end run over 10 s

ROOT = Path(__file__).resolve().parents[2]


def encode_throughput(tmp_path, *flags: str) -> CliRun:
    """benchmarks/encode_throughput.py FLAGS --out TMP_PATH, loaded afresh (its module state is per run)."""
    spec = importlib.util.spec_from_file_location("encode_throughput", ROOT / "benchmarks" / "encode_throughput.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return captured(module.main, [*flags, "--out", str(tmp_path)])


def test_cpu_benchmark_smoke_run(tmp_path):
    proc = encode_throughput(tmp_path, "--cpu", "--repeats", "1", "--corpus-size", "24", "--conversations", "12")
    assert proc.returncode == 0, proc.stderr[-2000:]
    [path] = list(tmp_path.glob("cpu-*.json"))
    report = json.loads(path.read_text(), parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))
    assert report["mode"] == "cpu"
    methods = {(row["workload"], row["method"]) for row in report["rows"]}
    for workload in ("passages", "conversations"):
        assert {(workload, "sentence-transformers default"), (workload, "mtrbench engine")} <= methods
        info = report["workloads"][workload]
        assert info["agreement_min_cosine"]["engine_vs_st_fp32"] >= 0.9999
        assert info["texts"] == {"passages": 24, "conversations": 12}[workload]
    for row in report["rows"]:
        assert row["docs_per_s"] > 0 and math.isfinite(row["docs_per_s"])
        assert row["docs_per_s"] == row["texts"] / sorted(row["seconds"])[len(row["seconds"]) // 2]
    assert "mtrbench engine" in proc.stdout and "% ceiling" in proc.stdout


def _run(tmp_path, *flags):
    proc = encode_throughput(tmp_path, *flags)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def test_gpu_mode_rehearsal_runs_its_whole_code_path_on_cpu(tmp_path):
    """The GPU mode has no CI machine; --rehearse runs the same function on the CPU with a tiny model, so
    a broken GPU benchmark shows up here instead of in scarce GPU time."""
    proc = _run(tmp_path, "--rehearse", "--corpus-size", "40", "--conversations", "12")
    [path] = list(tmp_path.glob("*-rehearsal.json"))
    report = json.loads(path.read_text())
    assert report["mode"] == "gpu-rehearsal" and "speeds" in report["note"]
    assert report["engine"]["packed"] is True  # --rehearse forces the packed path (reference kernel on CPU)
    for workload, texts in (("passages", 40), ("conversations", 12)):
        methods = {row["method"]: row for row in report["rows"] if row["workload"] == workload}
        assert set(methods) == {
            "sentence-transformers default",
            "sentence-transformers bf16",
            "mtrbench engine",
            "mtrbench engine, static",
            "mtrbench engine, fused",
            "mtrbench engine, padded",
            "full static batch (transformers, SDPA)",
        }
        engine = methods["mtrbench engine"]
        assert (
            engine["speedup_over_st_bf16_bs256"]
            == engine["docs_per_s"] / methods["sentence-transformers bf16"]["docs_per_s"]
        )
        info = report["workloads"][workload]
        assert info["texts"] == texts
        agreement = info["agreement_min_cosine"]
        assert agreement["engine_vs_st_bf16"] >= 0.999
        # the static and fused modes ran as such (no fallback), on static batches, and agree with eager batches
        for mode in ("static", "fused"):
            assert report["engine_modes"][mode]["mode"] == mode and "mode_reason" not in report["engine_modes"][mode]
            assert info["static_batches"][mode]["static"] > 0
            assert agreement[f"{mode}_vs_engine"] >= 0.9999 and agreement[f"{mode}_vs_st_bf16"] >= 0.999
            # the timeline saw every batch the engine ran, and its parts add up to the wall time it measured
            timeline = info["timeline"][mode]
            counted = timeline["engine_counted"]
            assert timeline["batches"] == counted["static"] + counted["other"] > 0
            assert timeline["static_batches"] == counted["static"] > 0
            parts = timeline["first_batch_wait_ms"] + timeline["between_batches_ms"] + timeline["after_last_batch_ms"]
            inside = timeline["inside_batches_share"] * timeline["total_ms"]
            assert parts + inside == pytest.approx(timeline["total_ms"], rel=1e-6)
            assert 0 < timeline["inside_batches_share"] <= 1 and timeline["non_static_batches_ms"] <= inside
        # the full static batch's row is measured against the ceiling of its own length
        static = methods["full static batch (transformers, SDPA)"]
        limit = info["full_static_batch"]
        assert (
            static["texts"] == limit["texts"] and static["batching"] == f"{limit['texts']} x {limit['tokens']} tokens"
        )
        assert static["pct_of_ceiling"] == pytest.approx(100 * static["docs_per_s"] / limit["ceiling_docs_per_s"])
        assert set(report["targets"][f"{workload}/fused"]) == {
            f"pct_of_ceiling>={ {'passages': 68, 'conversations': 62}[workload] }",
            "speedup_over_st_default>=13",
            "agreement>=0.999",
        }
    assert report["default_mode"] == "eager"  # on the CPU
    # the decoder check: Qwen3- and Mistral-shaped embedders, padded and packed, against sentence-transformers
    decoder = report["decoder"]
    assert decoder["ok"] and decoder["packed_checked"]
    for arch in ("qwen3", "mistral"):
        assert set(decoder["models"][arch]) == {"padded", "packed"}
        assert min(row["min_cosine"] for row in decoder["models"][arch].values()) >= 0.999
    assert "decoder check: ok" in proc.stdout
    # the retriever-family check: mtrbench's sparse (CSR) and multi-vector (token list) encode paths against
    # sentence-transformers' own encode and similarity
    families = report["families"]
    assert families["ok"] and set(families["models"]) == {"sparse", "multi-vector"}
    for row in families["models"].values():
        assert row["max_score_diff"] <= 1e-3 and row["min_cosine"] >= 0.999
    assert "sparse / multi-vector check: ok" in proc.stdout
    assert "speeds and targets mean nothing" in proc.stdout


def test_e2e_rehearsal_reads_the_corpus_from_the_cache_the_second_time(tmp_path):
    work = tmp_path / "work"
    _run(tmp_path, "--rehearse", "--e2e", "--corpus-size", "100", "--conversations", "8", "--work", str(work))
    [path] = list(tmp_path.glob("*-rehearsal-e2e.json"))
    report = json.loads(path.read_text())
    first, second = report["runs"]
    assert (first["corpus"], second["corpus"]) == ("cold", "warm") and report["reused_work"] is False
    assert first["embedding_cache"]["encoded"] == first["embedding_cache"]["shards"] >= 1
    assert second["embedding_cache"]["encoded"] == 0
    assert second["embedding_cache"]["loaded"] == second["embedding_cache"]["shards"]
    assert second["main_score"] == first["main_score"]
    assert report["model"] == "tiny bge-large-shaped (random)"

    # The same --work again: task, model and cache are reused, so both runs read the corpus from the cache.
    _run(tmp_path, "--rehearse", "--e2e", "--corpus-size", "100", "--conversations", "8", "--work", str(work))
    again = json.loads(path.read_text())
    assert again["reused_work"] is True and [r["corpus"] for r in again["runs"]] == ["warm", "warm"]
    assert again["runs"][0]["main_score"] == first["main_score"]

    # Another recipe in that folder replaces it; a folder the benchmark did not make is refused.
    _run(tmp_path, "--rehearse", "--e2e", "--corpus-size", "60", "--conversations", "8", "--work", str(work))
    assert json.loads(path.read_text())["runs"][0]["corpus"] == "cold"
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    proc = encode_throughput(tmp_path, "--rehearse", "--e2e", "--work", str(foreign))
    assert proc.returncode != 0 and "not a folder this benchmark made" in proc.stderr
    assert (foreign / "keep.txt").read_text() == "mine"


def test_scale_benchmark_smoke_run(tmp_path):
    """benchmarks/scale.py at toy size: single process and Ray with 1 and 2 workers agree, and the streamed
    search gives the in-memory run within the cap's neighbourhood."""
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "scale.py"),
            "--corpus-size",
            "300",
            "--block",
            "100",
            "--search-sizes",
            "3000",
            "--dim",
            "32",
            "--queries",
            "8",
            "--search-memory",
            str(2**20),
            "--cpus",
            "2",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    [path] = list(tmp_path.glob("scale-*.json"))
    report = json.loads(path.read_text(), parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))
    rows = report["encoding"]
    assert [row["workers"] for row in rows] == [0, 1, 2]
    for row in rows:
        assert row["passages"] == 300 and row["passages_per_s"] > 0
        assert row["ratio_to_single"] == round(row["passages_per_s"] / rows[0]["passages_per_s"], 3)
    assert all(row["min_cosine_vs_single"] >= 0.9999 for row in rows[1:])
    [search] = report["search"]
    assert search["docs"] == 3000 and search["same_run"] is True
    assert "ray, 2 workers" in proc.stdout
