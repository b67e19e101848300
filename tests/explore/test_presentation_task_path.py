"""`explore` finds a task given as a path at `eval` time from any folder: the result records where it was; results
of a task given by name stay as they were (no such key)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from explore_support import ROOT, embedded

from mtrbench.cli import main
from mtrbench.data import resolve_card
from mtrbench.explore.site import task_card
from mtrbench.infra.errors import UserInputError
from mtrbench.results.result import TASK_PATH, Result, task_location


def _result_json(folder: Path) -> Path:
    (path,) = [p for p in folder.rglob("*.json") if p.name != "model_meta.json"]
    return path


def test_explore_finds_a_folder_task_from_another_folder(tmp_path, monkeypatch):
    work, elsewhere, results = tmp_path / "work", tmp_path / "elsewhere", tmp_path / "results"
    work.mkdir(), elsewhere.mkdir()
    shutil.copytree(ROOT / "tasks" / "mtrbench-sample", work / "my-sample")
    monkeypatch.chdir(work)
    args = ["eval", "--model", "bm25", "--task", "./my-sample", "--limit", "1", "--history", "current"]
    assert main([*args, "--output-dir", str(results), "--quiet"]) == 0
    document = json.loads(_result_json(results).read_text())
    assert document["mtrbench"][TASK_PATH] == str((work / "my-sample").resolve())
    monkeypatch.chdir(elsewhere)  # no my-sample/ here: the task name alone would not be found
    assert main(["explore", str(results), "-o", str(tmp_path / "site")]) == 0
    index = embedded(tmp_path / "site" / "index.html")
    assert len(index["conversations"]) == 1


def test_a_card_file_given_as_a_path_is_recorded_absolute(tmp_path, monkeypatch):
    card = tmp_path / "cards" / "mine.yaml"
    card.parent.mkdir()
    card.write_text(
        f"name: mine\ndescription: d\nformat: mtrbench\nsource: {{path: {ROOT / 'tasks' / 'mtrbench-sample'}}}\n"
        "splits: [test]\neval_split: test\n"
    )
    monkeypatch.chdir(tmp_path)
    assert task_location(resolve_card("cards/mine.yaml")) == {TASK_PATH: str(card.resolve())}


def test_a_registered_task_records_no_path():
    assert task_location(resolve_card("mtrbench-sample")) == {}


def test_a_recorded_task_path_that_is_gone_is_one_error_naming_it(tmp_path):
    result = Result(
        {"task_name": "gone-task", "mtrbench": {TASK_PATH: str(tmp_path / "gone-task")}}, tmp_path / "r.json"
    )
    with pytest.raises(UserInputError, match=r"r\.json: its task .*gone-task is not there any more"):
        task_card(result)
    registered = Result(
        {"task_name": "mtrbench-sample", "mtrbench": {TASK_PATH: str(tmp_path / "x")}}, tmp_path / "r.json"
    )
    assert task_card(registered).name == "mtrbench-sample"  # moved, but its name still finds it
