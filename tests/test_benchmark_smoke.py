"""CI smoke run of benchmarks/encode_throughput.py --cpu: it runs, writes strict JSON, and the engine's
embeddings agree with sentence-transformers'. Speed is the benchmark's business, not a test's."""

import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_cpu_benchmark_smoke_run(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "encode_throughput.py"), "--cpu", "--repeats", "1",
                           "--corpus-size", "24", "--conversations", "12", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
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
