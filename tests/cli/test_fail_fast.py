"""Typos in --history and --metrics fail before any model loads (they cost 10-16 s of model loading before)."""

from __future__ import annotations

import pytest

import mtrbench
from mtrbench.cli import main


@pytest.fixture()
def no_model_loading(monkeypatch):
    import mtrbench.retrieve.builder as builder

    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the request was checked")

    monkeypatch.setattr(builder, "_load", refuse)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--history", "fulll"], "unknown history strategy 'fulll'"),
        (["--metrics", "nDCG@10,recal@5"], "recal"),
        (["--history", "rewrite:llm"], "needs a rewriter model"),
        (["--top-k", "5"], "--top-k 5 is smaller than the largest cutoff"),
    ],
)
def test_eval_checks_the_request_before_loading_the_model(flags, message, no_model_loading, tmp_path, capsys):
    assert main(["eval", "--model", "minilm", "--output-dir", str(tmp_path), "--quiet", *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and message in err[0]


def test_evaluate_checks_the_request_before_loading_the_model(no_model_loading, tmp_path):
    with pytest.raises(mtrbench.UserInputError, match="unknown history strategy"):
        mtrbench.evaluate("minilm", "mtrbench-sample", history="fulll", output_dir=tmp_path, show_progress=False)
