"""Typed leaderboard entries write the JSON they were read from, and a rebuilt leaderboard is the shipped one."""

from __future__ import annotations

import json

import pytest

from mtrbench.leaderboard.build import build_document
from mtrbench.leaderboard.entries import LeaderboardEntry, load_leaderboard_entries
from mtrbench.leaderboard.schema import leaderboards_dir

SHIPPED = sorted(p for p in leaderboards_dir().glob("*.json") if p.name != "schema.json")


def as_text(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_entry_reads_and_writes_back_byte_for_byte(path):
    entries = json.loads(path.read_text(encoding="utf-8"))["entries"]
    assert as_text([LeaderboardEntry.from_json(e).to_json() for e in entries]) == as_text(entries)


def test_rebuilding_the_shipped_sample_gives_its_entries_groups_and_separations():
    """sample.json was built (before entries were typed) from the results it lists; rebuilding it from its own
    entries must give the same entries, groups and separations, byte for byte."""
    path = leaderboards_dir() / "sample.json"
    shipped = json.loads(path.read_text(encoding="utf-8"))
    assert shipped.get("groups"), "sample.json is a built leaderboard"
    rebuilt = build_document(load_leaderboard_entries(path), name=shipped["name"], description="")
    for key in ("entries", "groups", "separations"):
        assert as_text(rebuilt[key]) == as_text(shipped[key]), key
