"""How fast the command line answers when it has nothing heavy to do: ``mtrbench --version``, ``mtrbench --help``
and ``mtrbench eval --history questons`` (a typo that must fail before any model or dataset loads).

Each command runs ``--runs`` times (default 5) as a fresh ``python -m mtrbench.cli`` process, in a scratch working
directory (so nothing lands in the checkout's ``results/``); the wall time of the whole process is measured,
interpreter start included, and its CPU time (user + system). Prints a table (min, median, max against the
0.3 s target) and writes JSON to
``benchmarks/results/cli-latency-<host>-<date>.json`` (``--out DIR``). Exit status 1 when a command answers with
the wrong exit code or output (the typo not refused, a traceback).

Also reports which heavy modules ``import mtrbench.cli`` pulls in (none is the goal) and the interpreter's own
start-up time (``python -c pass``) as the floor under every number.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 0.3
HEAVY = (
    "torch",
    "transformers",
    "openai",
    "datasets",
    "pandas",
    "matplotlib",
    "pytrec_eval",
    "scipy",
    "numpy",
    "sklearn",
    "sentence_transformers",
    "rich",
)
# (name, arguments, expected exit code, text the output must contain)
COMMANDS = (
    ("--version", ["--version"], 0, "mtrbench "),
    ("--help", ["--help"], 0, "usage: mtrbench"),
    ("eval --history questons", ["eval", "--model", "bm25", "--history", "questons"], 2, "error: "),
)


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_command(args: list[str], cwd: str) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, CPU seconds, the finished process)."""
    cpu, started = children_cpu_s(), time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mtrbench.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    return time.perf_counter() - started, children_cpu_s() - cpu, done


def heavy_imports() -> list[str]:
    probe = f"import sys, mtrbench.cli; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    return [m for m in out.split(",") if m]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    rows, failures = [], []
    with tempfile.TemporaryDirectory() as scratch:
        floor = [time_command_python(scratch) for _ in range(args.runs)]
        for name, argv, code, text in COMMANDS:
            times, cpu = [], []
            for _ in range(args.runs):
                seconds, cpu_seconds, done = time_command(argv, scratch)
                times.append(seconds)
                cpu.append(cpu_seconds)
                output = done.stdout + done.stderr
                if done.returncode != code or text not in output or "Traceback" in output:
                    failures.append(f"{name}: exit {done.returncode}, output {output.strip()[:200]!r}")
            rows.append(
                {
                    "command": f"mtrbench {name}",
                    "runs_s": times,
                    "min_s": min(times),
                    "median_s": statistics.median(times),
                    "max_s": max(times),
                    "cpu_runs_s": cpu,
                    "cpu_median_s": statistics.median(cpu),
                    "under_target": statistics.median(times) < TARGET_S,
                    "first_line": output.strip().splitlines()[0] if output.strip() else "",
                }
            )
    heavy = heavy_imports()
    print(
        f"CLI latency, {args.runs} runs each, wall time of a fresh process (target < {TARGET_S} s); "
        f"python -c pass: median {statistics.median(floor):.3f} s"
    )
    print(f"{'command':<36}{'min':>8}{'median':>8}{'max':>8}{'CPU':>8}  target")
    for r in rows:
        print(
            f"{r['command']:<36}{r['min_s']:>8.3f}{r['median_s']:>8.3f}{r['max_s']:>8.3f}{r['cpu_median_s']:>8.3f}  "
            f"{'ok' if r['under_target'] else 'OVER'}"
        )
    print("(CPU: median user + system seconds of the process; on a shared machine it says more than wall time)")
    print(f"heavy modules imported by `import mtrbench.cli`: {', '.join(heavy) or 'none'}")
    for f in failures:
        print(f"FAILED {f}")
    host = platform.node() or "host"
    out = Path(args.out) / f"cli-latency-{host}-{datetime.date.today().isoformat()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "python": platform.python_version(),
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
                "runs": args.runs,
                "target_s": TARGET_S,
                "python_start_median_s": statistics.median(floor),
                "commands": rows,
                "heavy_imports": heavy,
                "failures": failures,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"written: {out}")
    return 1 if failures else 0


def time_command_python(cwd: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], cwd=cwd, check=True)
    return time.perf_counter() - started


if __name__ == "__main__":
    sys.exit(main())
