"""`mtrbench tasks --offline / --family NAME`: filters checked against the card files themselves."""

from __future__ import annotations

from pathlib import Path

import yaml

from mtrbench.cli import main

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def built_in_cards() -> dict[str, dict]:
    return {path.stem: yaml.safe_load(path.read_text()) for path in TASKS.glob("*.yaml")}


def listed(capsys, *flags: str) -> set[str]:
    assert main(["tasks", *flags]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("──")) + 1
    return {line.split()[0] for line in lines[start:] if line.strip() and not line.startswith(" ")}


def test_family_lists_exactly_the_cards_of_that_format(capsys):
    cards = built_in_cards()
    for family in ("bridge", "chatrag", "trec-cast"):
        expected = {name for name, card in cards.items() if card["format"] == family}
        assert len(expected) >= 2
        assert listed(capsys, "--family", family) == expected


def test_offline_lists_the_cards_whose_local_folder_exists(capsys):
    cards = built_in_cards()
    expected = {
        name
        for name, card in cards.items()
        if card["source"].get("path")
        and (TASKS / Path(card["source"]["path"]).expanduser()).exists()
        and not card.get("user_supplies")  # NIST qrels or a passage collection the user brings
    }
    assert "ikat-2023" not in expected and "trec-cast-2022" not in expected
    assert "mtrbench-sample" in expected  # bundled with the package
    assert not any(cards[name]["source"].get("hub") and not cards[name]["source"].get("path") for name in expected)
    assert listed(capsys, "--offline") == expected
    assert listed(capsys, "--offline", "--family", "mtrbench") == {"mtrbench-sample"}
    assert listed(capsys, "--offline", "--family", "bridge") == set()  # BRIDGE comes from the Hub


def test_the_listing_marks_what_runs_offline(capsys):
    assert main(["tasks"]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines() if line[:1].isalpha()}
    assert rows["mtrbench-sample"][3] == "yes" and rows["bridge-nq"][3] == "no"


def test_unknown_family_is_one_error_line_naming_the_families(capsys):
    assert main(["tasks", "--family", "brige"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: --family brige") and "bridge" in err
