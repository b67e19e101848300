"""`mtrbench models`: each alias with its kind, filtered by --kind, one alias in full, and as JSON."""

from __future__ import annotations

import json

from cli_run import run_cli

from mtrbench.models.spec import KINDS
from mtrbench.retrieve.registry import all_models

SPLADE_ALIASES = {"splade-v3", "splade-cocondenser-ensembledistil", "disco-topiocqa-mistral"}
COLBERT_ALIASES = {"colbertv2", "answerai-colbert-small"}


def _first_lines(stdout: str) -> dict[str, str]:
    """Alias -> its block's first (unindented) line; the title line is left out."""
    return {line.split()[0]: line for line in stdout.splitlines()[1:] if line and not line.startswith(" ")}


def test_every_alias_is_listed_with_its_kind():
    run = run_cli("models")
    assert run.returncode == 0, run.stderr
    firsts = _first_lines(run.stdout)
    for name, spec in all_models().items():
        assert spec.kind in KINDS, name
        assert firsts[name].split()[:2] == [name, spec.kind], firsts[name]
    assert all(len(line) <= 80 for line in run.stdout.splitlines())


def test_kind_filter_lists_only_that_kind():
    sparse = run_cli("models", "--kind", "sparse", "--json")
    listed = {row["alias"]: row for row in json.loads(sparse.stdout)}
    assert SPLADE_ALIASES <= set(listed)
    assert {row["kind"] for row in listed.values()} == {"sparse"}
    assert "bm25" not in listed and "minilm" not in listed  # BM25 is lexical, MiniLM dense
    assert listed["disco-topiocqa-mistral"]["doc_model_id"] == "naver/splade-cocondenser-ensembledistil"
    text = run_cli("models", "--kind", "sparse").stdout
    assert set(_first_lines(text)) == set(listed)
    colbert = {row["alias"] for row in json.loads(run_cli("models", "--kind", "multi-vector", "--json").stdout)}
    assert COLBERT_ALIASES <= colbert and not colbert & SPLADE_ALIASES
    assert {row["alias"] for row in json.loads(run_cli("models", "--kind", "lexical", "--json").stdout)} >= {"bm25"}


def test_one_alias_in_full():
    spec = all_models()["splade-v3"]
    run = run_cli("models", "splade-v3")
    assert run.returncode == 0, run.stderr
    fields = dict(line.strip().split(": ", 1) for line in run.stdout.splitlines()[2:] if ": " in line)
    assert fields["licence"] == spec.license == "cc-by-nc-sa-4.0"
    assert fields["released"] == spec.release_date
    assert fields["revision"] == spec.revision
    assert fields["vocabulary"] == str(spec.embedding_dim)
    assert fields["max tokens"] == str(spec.max_tokens)
    assert fields["parameters"] == f"{round(spec.parameters / 1e6)}M"  # 109,514,298 as model cards round it
    assert fields["origin"] == "built-in"


def test_an_unknown_alias_is_one_error_line():
    run = run_cli("models", "splade-v4")
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("error: ") and "splade-v3" in run.stderr
