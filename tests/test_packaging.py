"""setup.cfg lists its packages by hand: a subpackage missing from the list installs fine in editable
mode (the checkout is on the path) and is silently absent from a wheel, so `pip install .` breaks."""
from __future__ import annotations

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def listed_packages() -> set[str]:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return {line.strip() for line in config["options"]["packages"].splitlines() if line.strip()}


def test_every_subpackage_is_listed_in_setup_cfg():
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "mtrbench").rglob("__init__.py")
    }
    missing = sorted(on_disk - listed_packages())
    assert not missing, f"add to setup.cfg [options] packages: {missing}"


def test_listed_packages_exist():
    mapped = {"mtrbench.tasks": ROOT / "tasks", "mtrbench.leaderboards": ROOT / "leaderboards"}
    for name in listed_packages():
        folder = mapped.get(name, ROOT.joinpath(*name.split(".")))
        assert folder.is_dir(), f"setup.cfg lists {name} but {folder} does not exist"
