"""``mtrbench.evaluate(..., show_progress=False)`` writes nothing to stdout or stderr: what the library has to say
is a log record under the ``mtrbench`` logger (which has a NullHandler), for the user to capture or show."""

from __future__ import annotations

import logging

import mtrbench

REGISTERED_NOTE = (
    "note: 'mtrbench-sample' is a registered task; using it, not the folder ./mtrbench-sample "
    "(pass ./mtrbench-sample for the folder)"
)


def test_evaluate_without_progress_writes_nothing(tmp_path, monkeypatch, capfd, caplog):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mtrbench-sample").mkdir()  # a folder named like the task: resolving the name logs a note
    with caplog.at_level(logging.INFO, logger="mtrbench"):
        results = mtrbench.evaluate(
            "bm25", "mtrbench-sample", history="current", output_dir=tmp_path / "results", show_progress=False
        )
    assert [(r.task_name, r.history) for r in results] == [("mtrbench-sample", "current")]
    assert results[0].path is not None and results[0].path.is_file()
    captured = capfd.readouterr()  # file descriptors: tqdm, C extensions and print alike
    assert captured.out == "" and captured.err == ""
    notes = {(r.name, r.levelno, r.getMessage()) for r in caplog.records if r.name.startswith("mtrbench")}
    assert notes == {("mtrbench.data", logging.WARNING, REGISTERED_NOTE)}
