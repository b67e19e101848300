"""Needs and personas from tasks (iKAT's PTKB as the persona), the personas file, profiles and the user prompt."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mtrbench.data import card_for_folder, load_task
from mtrbench.infra.errors import DataError
from mtrbench.simulate.needs import needs_from_task, read_personas, with_personas
from mtrbench.simulate.profiles import parse_profile
from mtrbench.simulate.prompts import DONE, Exchange, parse_user_reply, user_messages

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
from ikat_fixtures import topics  # noqa: E402


def test_ikat_topics_give_needs_with_their_ptkb_as_persona():
    task = load_task("ikat-2025", require_corpus=False)
    need = needs_from_task(task, 1)[0]
    topic = topics(2025)[0]
    first = next(q for q in task.queries if q.conversation_id == need.need_id)
    assert need.need_id == str(topic["number"])
    assert need.persona == tuple(topic["ptkb"])
    assert need.opening == (first.gold_rewrite or first.query).strip()
    system = user_messages(need, parse_profile("novice"), [])[0]["content"]
    assert all(f"- {statement}" in system for statement in topic["ptkb"])
    assert "everyday words" in system


def test_gold_rewrites_and_judgments_define_a_need(two_needs):
    lake = needs_from_task(load_task(card_for_folder(two_needs)))[0]
    assert lake.questions == ("How deep is Lake Varnholm?", "Which fish live in Lake Varnholm?")
    assert dict(lake.qrels) == {"lake-depth": 2, "lake-fish": 1}
    assert lake.responses == ("212 metres.", "Char and trout.")


def test_a_personas_file_replaces_the_tasks(two_needs, tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"need_id": "bridge", "persona": ["I drive a lorry."]}) + "\n\n")
    needs = with_personas(needs_from_task(load_task(card_for_folder(two_needs))), read_personas(path))
    assert [n.persona for n in needs] == [(), ("I drive a lorry.",)]
    path.write_text(json.dumps({"need_id": "canal", "persona": []}) + "\n")
    with pytest.raises(DataError, match="names needs the task does not have: canal"):
        with_personas(needs, read_personas(path))
    path.write_text('{"need_id": "lake", "persona": "not a list"}\n')
    with pytest.raises(DataError, match=rf"{path} line 1: needs"):
        read_personas(path)


def test_profiles_and_the_reply_reader():
    profile = parse_profile("novice,terse,impatient")
    assert (profile.cooperation, profile.patience, profile.wording, profile.max_turns) == ("terse", "impatient",
                                                                                          "novice", 3)  # fmt: skip
    assert parse_profile("", max_turns=5).max_turns == 5
    assert parse_user_reply(f"Thanks, that helps. {DONE}") == {"utterance": "Thanks, that helps.", "satisfied": True}
    assert parse_user_reply('You: "And the toll?"') == {"utterance": "And the toll?", "satisfied": False}
    with pytest.raises(ValueError):
        parse_user_reply("  ")


def test_the_clarifying_instruction_follows_the_profile(two_needs):
    need = needs_from_task(load_task(card_for_folder(two_needs)))[0]
    asked = [Exchange("How deep is it?", "Which lake do you mean?", clarifying=True)]
    terse = user_messages(need, parse_profile("terse"), asked)[1]["content"]
    assert terse.endswith("answer in as few words as will do.")
    assert "You: How deep is it?\nAssistant: Which lake do you mean?" in terse
    plain = user_messages(need, parse_profile(""), [Exchange("How deep is it?", None)])[1]["content"]
    assert "Assistant: (the assistant did not answer)" in plain and plain.endswith("Write your next message.")
