"""What `--help` says about defaults that depend on the task, and which official protocols it offers."""

from __future__ import annotations

import argparse

import pytest

from mtrbench.cli import build_parser
from mtrbench.data.cards import all_cards
from mtrbench.measures.protocols import PROTOCOLS, TREC_EVAL


def _help(command: str, flag: str) -> str:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    return commands[command]._option_string_actions[flag].help or ""


def test_eval_cutoffs_and_measures_default_to_the_task_card_s_own():
    """The help once showed the sample card's cutoffs as if they were every task's default."""
    cards = all_cards()
    assert {c.k_values for c in cards.values()} != {cards["mtrbench-sample"].k_values}  # the default does vary
    for flag, word in (("--k", "cutoffs"), ("--metrics", "measures")):
        text = _help("eval", flag)
        assert f"[the task card's own {word}]" in text
    assert ",".join(map(str, cards["mtrbench-sample"].k_values)) not in _help("eval", "--k")


@pytest.mark.parametrize("command", ["eval", "score"])
def test_protocol_help_lists_every_registered_official_protocol(command):
    text = _help(command, "--protocol")
    official = [name for name in PROTOCOLS if name != TREC_EVAL]
    assert len(official) >= 6  # mtrag, bridge, mtr-suite, ikat, ikat-ptkb, trec-cast at least
    missing = [name for name in official if (f"official:{name}" if command == "score" else name) not in text]
    assert not missing, text
