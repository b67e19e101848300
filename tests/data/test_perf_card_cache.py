"""Task cards are parsed once per file version: an eval resolves its task several times, and each time used to
parse every card again; a card file that changes is parsed again."""

from __future__ import annotations

import os

import yaml

from mtrbench.data.cards import cards_dir, load_card


def test_a_changed_card_file_is_read_again(tmp_path):
    card = yaml.safe_load((cards_dir() / "mtrbench-sample.yaml").read_text())
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({**card, "name": "mine"}))
    first = load_card(path)
    assert load_card(path) is first  # unchanged: not parsed again
    stat = path.stat()
    path.write_text(yaml.safe_dump({**card, "name": "mina"}))  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert load_card(path).name == "mina"
    path.write_text(yaml.safe_dump({**card, "name": "mine-too"}))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same time, another size
    assert load_card(path).name == "mine-too"
