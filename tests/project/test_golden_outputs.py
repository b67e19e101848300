"""The result files of the sample evaluation (every history; BM25, BM25 with the model histories, MiniLM) and
of the generate / judge fixtures are byte-identical to the reference written before issue 31's refactor,
apart from the fields tests/golden_outputs.py lists (timings, dates, host, package versions, tmp paths, the
scripted server's port). The reference is tests/data/golden/<scenario>/, written by
tests/data/golden/regenerate.py on the pre-refactor commit: a failure here is a change of behaviour."""

from __future__ import annotations

import pytest
from golden_outputs import SCENARIOS, compare, run_scenario


def check(name: str, tmp_path) -> None:
    out = run_scenario(SCENARIOS[name], tmp_path)
    problems = compare(SCENARIOS[name], out)
    assert not problems, f"{len(problems)} file(s) differ from tests/data/golden/{name}:\n" + "\n".join(problems)


@pytest.mark.slow
def test_eval_bm25_every_history(tmp_path):
    check("eval-bm25", tmp_path)


@pytest.mark.slow
def test_eval_bm25_model_histories(tmp_path):
    check("eval-bm25-model-histories", tmp_path)


@pytest.mark.slow
def test_eval_minilm_every_history(tmp_path):
    check("eval-minilm", tmp_path)


def test_generate(tmp_path):
    check("generate", tmp_path)


def test_judge(tmp_path):
    check("judge", tmp_path)
