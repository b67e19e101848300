"""The command line's parser is light: `import mtrbench.cli` and building the whole parser import no heavy library
(torch, transformers, openai, ...), so --version, --help and option errors answer at once. Not timed here:
benchmarks/cli_latency.py measures the wall times."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("torch", "transformers", "openai", "datasets", "pandas", "matplotlib", "pytrec_eval", "sentence_transformers",
         "sklearn", "scipy")


def imported_after(code: str) -> list[str]:
    probe = f"import sys\n{code}\nimport json; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_and_parser_pull_in_no_heavy_library():
    assert imported_after("import mtrbench.cli") == []
    assert imported_after("from mtrbench.cli import build_parser; build_parser()") == []


def test_an_option_typo_fails_before_any_model_loads():
    code = ("from mtrbench.cli import main\n"
            "assert main(['eval', '--model', 'minilm', '--history', 'questons']) == 2\n"
            "assert main(['eval', '--model', 'minilm', '--metrics', 'nDCG@10,Bogus@3']) == 2")
    imported = imported_after(code)
    assert not {"torch", "transformers", "sentence_transformers", "openai", "datasets"} & set(imported), imported
