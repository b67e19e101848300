"""Registered task names win over same-named folders in the working directory; ./NAME picks the folder."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
import yaml

from mtrbench.data import resolve_card
from mtrbench.data.cards import all_cards
from mtrbench.infra.errors import MtrbenchError

REGISTERED_NOTE = "note: '{0}' is a registered task; using it, not the folder ./{0} (pass ./{0} for the folder)"


@pytest.fixture
def workdir(tmp_path, native_mini, monkeypatch):
    """A working directory with folders named like registered tasks: one empty, one a valid task folder."""
    (tmp_path / "trec-cast-2019").mkdir()
    shutil.copytree(native_mini, tmp_path / "qrecc")
    shutil.copytree(native_mini, tmp_path / "my-task")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def mtrbench(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "mtrbench.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=600
    )


@pytest.mark.parametrize("name", ["trec-cast-2019", "qrecc"])
def test_registered_name_wins_over_a_folder(workdir, name):
    notes = []
    card = resolve_card(name, note=notes.append)
    assert card == all_cards()[name]
    assert [f"note: {n}" for n in notes] == [REGISTERED_NOTE.format(name)]


def test_dot_slash_picks_the_folder(workdir):
    notes = []
    card = resolve_card("./qrecc", note=notes.append)
    assert card.format == "mtrbench" and card.source.path == str(workdir / "qrecc") and card != all_cards()["qrecc"]
    assert notes == []
    with pytest.raises(MtrbenchError, match="cannot tell the format"):
        resolve_card("./trec-cast-2019")  # the folder was asked for, and it is not a task folder


def test_plain_name_of_an_unregistered_folder_still_works_with_a_note(workdir):
    notes = []
    card = resolve_card("my-task", note=notes.append)
    assert card.name == "my-task" and card.source.path == str(workdir / "my-task")
    assert notes == ["'my-task' is not a registered task; using the folder ./my-task"]
    (workdir / "not-a-task").mkdir()
    with pytest.raises(MtrbenchError, match="neither a registered task .* nor a task folder"):
        resolve_card("not-a-task")


def test_paths_and_card_files(workdir):
    with pytest.raises(MtrbenchError, match="no such folder or task card file"):
        resolve_card("./no-such-folder")
    with pytest.raises(MtrbenchError, match="unknown task 'no-such-task'"):
        resolve_card("no-such-task")
    card = resolve_card("qrecc").to_dict()
    card["name"] = "my-card"
    (workdir / "my-card.yaml").write_text(yaml.safe_dump(card))
    assert resolve_card("my-card.yaml").name == "my-card"


@pytest.mark.slow
def test_tasks_show_with_data_dir_uses_the_registered_card(workdir, shared):
    """Before: the empty ./trec-cast-2019 took over the name and this failed with "cannot tell the format"."""
    proc = mtrbench(
        "tasks", "show", "trec-cast-2019", "--data-dir", str(shared / "datasets/real/trec-cast"), "--stats", cwd=workdir
    )
    assert proc.returncode == 0, proc.stderr
    shown = yaml.safe_load(proc.stdout)
    assert shown["name"] == "trec-cast-2019" and shown["stats"]
    assert proc.stderr.splitlines() == [REGISTERED_NOTE.format("trec-cast-2019")]
    proc = mtrbench("tasks", "show", "./trec-cast-2019", cwd=workdir)
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "cannot tell the format" in proc.stderr
    proc = mtrbench("tasks", "show", "./qrecc", cwd=workdir)
    assert proc.returncode == 0 and "format: mtrbench" in proc.stdout and proc.stderr == ""
