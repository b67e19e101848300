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


# `--help` imported 164 mtrbench modules when every command module registered its flags beside its handler (52
# before the stage-runner refactor); flags modules alone import about 45
MAX_MTRBENCH_MODULES = 60

PROBE = f"""
import contextlib, io, json, sys
heavy = lambda: [m for m in {HEAVY!r} if m in sys.modules]
ours = lambda: sorted(m for m in sys.modules if m == "mtrbench" or m.startswith("mtrbench."))
import mtrbench.cli
seen = {{"import": heavy()}}
from mtrbench.cli import build_parser, main
build_parser()
seen["parser"], seen["parser_modules"] = heavy(), ours()
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        main(["--help"])
    except SystemExit:
        pass
seen["help"], seen["help_modules"], seen["help_text"] = heavy(), ours(), out.getvalue()
print(json.dumps(seen))
"""


def test_import_parser_and_help_pull_in_no_heavy_library_and_few_modules():
    """One fresh interpreter (import counting needs a clean one): `import mtrbench.cli`, building the whole parser
    and `--help` load no heavy library, and at most MAX_MTRBENCH_MODULES of mtrbench's own modules: no handler
    module and none of the domain code behind it."""
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["import"] == seen["parser"] == seen["help"] == []
    assert seen["help_text"].startswith("usage: mtrbench")
    for modules in (seen["parser_modules"], seen["help_modules"]):
        assert len(modules) <= MAX_MTRBENCH_MODULES, modules
        handlers = [m for m in modules if m.startswith("mtrbench.cli.") and not m.startswith("mtrbench.cli.flag")]
        assert set(handlers) <= {"mtrbench.cli.app", "mtrbench.cli.common"}, handlers
        assert not [m for m in modules if m.startswith(("mtrbench.pipeline", "mtrbench.retrieve", "mtrbench.data"))]


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
