"""Re-running a finished evaluation skips it before the model loads (pipeline/known_plans.py): the loader is not
called when an earlier plan of the same request says every history is finished, and is called as soon as one
is not, or the request differs."""

from __future__ import annotations

import pytest

import mtrbench
from mtrbench.cli import main
from mtrbench.pipeline.evaluate import EvalConfig
from mtrbench.pipeline.known_plans import request_key
from mtrbench.retrieve import RetrieverOptions, resolve
from mtrbench.retrieve.registry import ModelSpec

HISTORIES = "current,full"


def _refuse_loading(monkeypatch) -> list[str]:
    """Every loader the CLI and the API go through raises; the list records who tried."""
    calls: list[str] = []

    def refuse(model, *args, **kwargs):
        calls.append(getattr(model, "requested", str(model)))
        raise AssertionError("the model was loaded")

    for module in ("mtrbench.cli.eval", "mtrbench.pipeline.evaluate", "mtrbench.pipeline.api"):
        monkeypatch.setattr(f"{module}.assemble", refuse)
    return calls


def _eval(out, *extra: str) -> int:
    return main(["eval", "--model", "bm25", "--history", HISTORIES, "--output-dir", str(out), "--quiet", *extra])


def test_a_finished_eval_is_skipped_without_loading_the_model(tmp_path, monkeypatch, capsys):
    assert _eval(tmp_path) == 0
    written = sorted(tmp_path.rglob("mtrbench-sample.json"))
    stamps = [p.stat().st_mtime_ns for p in written]
    capsys.readouterr()
    calls = _refuse_loading(monkeypatch)
    assert _eval(tmp_path) == 0
    err = capsys.readouterr().err
    assert calls == []
    assert err.count("note: skipped bm25 on mtrbench-sample") == 2
    assert [p.stat().st_mtime_ns for p in written] == stamps  # nothing rewritten

    # the Python API takes the same path
    results = mtrbench.evaluate("bm25", "mtrbench-sample", history=HISTORIES, output_dir=tmp_path, show_progress=False)
    assert calls == [] and [r.history for r in results] == ["current", "full"]
    assert sorted(r.path for r in results) == written


@pytest.mark.parametrize(
    "change",
    [
        lambda out: next(out.rglob("history=current/mtrbench-sample.json")).unlink(),  # one history missing
        lambda out: "--limit=10",  # another request: its own plan, not known yet
    ],
    ids=["a-result-removed", "another-request"],
)
def test_the_model_is_loaded_when_anything_is_left_to_evaluate(tmp_path, monkeypatch, change):
    assert _eval(tmp_path) == 0
    extra = change(tmp_path)
    calls = _refuse_loading(monkeypatch)
    with pytest.raises(AssertionError, match="the model was loaded"):
        _eval(tmp_path, *([extra] if isinstance(extra, str) else []))
    assert calls == ["bm25"]


def test_only_requests_whose_model_files_cannot_change_are_remembered():
    config, options = EvalConfig(), RetrieverOptions()
    assert request_key(resolve("bm25"), "mtrbench-sample", config, options) is not None
    assert request_key(resolve("minilm"), "mtrbench-sample", config, options) is not None  # a packaged model
    hub = ModelSpec("some-model", "dense", model_id="org/some-model")
    assert request_key(resolve(hub), "mtrbench-sample", config, options) is None  # unpinned Hub id
    pinned = ModelSpec("some-model", "dense", model_id="org/some-model", revision="abc123")
    assert request_key(resolve(pinned), "mtrbench-sample", config, options) is not None
    assert request_key(resolve("bm25"), "mtrbench-sample", config, options.with_values(rerank="minilm")) is None
    assert request_key(resolve("bm25"), "mtrbench-sample", EvalConfig(histories=[len]), options) is None
