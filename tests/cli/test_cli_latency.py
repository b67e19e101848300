"""The command line's parser is light: `import mtrbench.cli` and building the whole parser import no heavy library
(torch, transformers, openai, ...), so --version, --help and option errors answer at once. Not timed here:
benchmarks/cli_latency.py measures the wall times."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = (
    "torch",
    "transformers",
    "openai",
    "datasets",
    "pandas",
    "matplotlib",
    "pytrec_eval",
    "sentence_transformers",
    "sklearn",
    "scipy",
)


def imported_after(code: str) -> list[str]:
    probe = f"import sys\n{code}\nimport json; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_and_parser_pull_in_no_heavy_library():
    assert imported_after("import mtrbench.cli") == []
    assert imported_after("from mtrbench.cli import build_parser; build_parser()") == []


TYPOS = [
    ["eval", "--model", "minilm", "--history", "questons"],
    ["eval", "--model", "minilm", "--metrics", "nDCG@10,Bogus@3"],
    [
        "rag",
        "--model",
        "minilm",
        "--history",
        "questons",
        "--generator-model",
        "g",
        "--generator-base-url",
        "http://127.0.0.1:9/v1",
    ],
    ["rag", "--model", "no-such-model-xyz", "--generator-model", "g", "--generator-base-url", "http://127.0.0.1:9/v1"],
    [
        "audit",
        "mtrbench-sample",
        "--negatives-history",
        "questons",
        "--llm-model",
        "m",
        "--llm-base-url",
        "http://127.0.0.1:9/v1",
    ],
    ["audit", "mtrbench-sample", "--negatives-model", "no-such-model-xyz", "--llm-model", "m"],
    ["export", "mtrbench-sample", "--format", "beir", "--out", "unused", "--history", "questons", "--model", "minilm"],
    ["export", "mtrbench-sample", "--format", "beir", "--out", "unused", "--model", "no-such-model-xyz"],
]


def test_option_typos_fail_before_any_model_or_dataset_loads(tmp_path):
    """Each typo exits 2 with one error line, and none pulled in torch, an LLM client or the datasets library."""
    code = (
        "import contextlib, io\n"
        "from mtrbench.cli import main\n"
        f"for argv in {TYPOS!r}:\n"
        "    err = io.StringIO()\n"
        "    with contextlib.redirect_stderr(err):\n"
        "        code = main(argv)\n"
        "    assert code == 2 and err.getvalue().startswith('error: ') and err.getvalue().count(chr(10)) == 1, "
        "(argv, code, err.getvalue())"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code + "\nimport sys, json\nprint(json.dumps([m for m in "
            f"{HEAVY!r} + ('datasets', 'bm25s') if m in sys.modules]))",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert not {"torch", "transformers", "sentence_transformers", "openai", "datasets", "bm25s"} & set(imported)
    assert not (tmp_path / "unused").exists()
