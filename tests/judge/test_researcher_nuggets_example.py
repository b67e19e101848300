"""docs/nuggets.md's worked example runs as written on the files it ships (docs/examples/nuggets/): the command in
the doc, in that folder, prints the doc's table, and scores.json holds the doc's arithmetic."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from tests.cli_run import run_cli

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "nuggets.md"
FILES = ROOT / "docs" / "examples" / "nuggets"


def _worked_example() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text[text.index("## Worked example") :]


def _table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(("┃", "│"))]


def test_the_documented_command_prints_the_documented_table(tmp_path, monkeypatch):
    section = _worked_example()
    [command] = [line[2:] for line in section.splitlines() if line.startswith("$ mtrbench ")]
    shutil.copytree(FILES, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    done = run_cli(*shlex.split(command)[1:])
    assert done.returncode == 0, done.stderr
    block = section[section.index("$ mtrbench ") : section.index("```", section.index("$ mtrbench "))]
    assert _table_rows(done.stdout) == _table_rows(block)

    runs = json.loads((tmp_path / "scores.json").read_text())["runs"]
    # the doc's arithmetic: per answer (strict_vital, vital, strict_all, all), then the run's means
    bm25 = {"geo-01_1": (1 / 2, 1.5 / 2, 2 / 3, 2.5 / 3), "geo-01_4": (1, 1, 1 / 2, 1 / 2)}
    dense = {"geo-01_1": (1, 1, 2 / 3, 2 / 3), "geo-01_4": (0, 0.5, 1 / 2, 3 / 4)}
    keys = ("strict_vital", "vital", "strict_all", "all")
    for name, answers in (("bm25-gen", bm25), ("dense-gen", dense)):
        run = runs[name]
        for qid, values in answers.items():
            assert [run["per_answer"][qid][k] for k in keys] == pytest.approx(values)
        means = [(answers["geo-01_1"][i] + answers["geo-01_4"][i]) / 2 for i in range(4)]
        assert [run["scores"][k] for k in keys] == pytest.approx(means)
    switch = runs["bm25-gen"]["by_topic_switch"]
    assert [switch["before_switch"][k] for k in keys] == pytest.approx(bm25["geo-01_1"])
    assert [switch["after_switch"][k] for k in keys] == pytest.approx(bm25["geo-01_4"])


def test_the_documented_first_line_is_the_shipped_files_first_line():
    section = _worked_example()
    snippet = section[section.index("```json") : section.index("```", section.index("```json") + 7)]
    first = json.loads((FILES / "bm25-gen.jsonl").read_text(encoding="utf-8").splitlines()[0])
    documented = [json.loads(found) for found in re.findall(r'\{"text": [^{}]*\}', snippet)]
    assert documented == first["nuggets"]
    assert (first["qid"], first["run_id"], first["response_length"]) == ("geo-01_1", "bm25-gen", 19)
