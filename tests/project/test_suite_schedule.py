"""The heaviest test files, handed out first under `pytest -n N --dist loadfile` (tests/suite_schedule.py)."""

from __future__ import annotations

from pathlib import Path

from suite_schedule import HEAVIEST_FILES

ROOT = Path(__file__).resolve().parents[2]


def test_every_heaviest_file_exists_once():
    """A renamed or deleted file would drop out of the schedule silently (its tests then run last again)."""
    assert len(set(HEAVIEST_FILES)) == len(HEAVIEST_FILES)
    assert [path for path in HEAVIEST_FILES if not (ROOT / path).is_file()] == []
