"""Packages are found by setuptools: every subpackage on disk, the task cards and the leaderboards must be
in a built wheel (an editable install hides a missing one, since the checkout is on the path)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory) -> set[str]:
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
    )
    if build.returncode != 0:
        pytest.fail(f"pip wheel failed: {build.stderr[-2000:]}")
    wheel = next(out.glob("mtrbench-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_every_subpackage_is_in_the_wheel(wheel_names):
    on_disk = {init.relative_to(ROOT).as_posix() for init in (ROOT / "mtrbench").rglob("__init__.py")}
    assert on_disk, "no packages found under mtrbench/"
    missing = sorted(on_disk - wheel_names)
    assert not missing, f"packages absent from the wheel: {missing}"


def test_task_cards_and_leaderboards_are_in_the_wheel(wheel_names):
    cards = {f"mtrbench/tasks/{p.name}" for p in (ROOT / "tasks").glob("*.yaml")}
    boards = {f"mtrbench/leaderboards/{p.name}" for p in (ROOT / "leaderboards").glob("*.json")}
    assert cards and boards
    assert not sorted((cards | boards) - wheel_names)
