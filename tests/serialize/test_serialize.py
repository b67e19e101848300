"""History strategies produce exact strings; truncation keeps the current question."""

from __future__ import annotations

import pytest

from mtrbench.data import load_task
from mtrbench.data.model import ConversationalQuery, Message
from mtrbench.infra.errors import MtrbenchError
from mtrbench.serialize import QueryFormat, Truncator, get_strategy


@pytest.fixture(scope="module")
def turn4(native_mini):
    task = load_task(str(native_mini))
    return next(q for q in task.queries if q.qid == "c1_4")


DEFAULT = QueryFormat()

EXPECTED = {
    "current": "when did it open?",
    "full": (
        "User: How deep is Lake Varnholm?\nAgent: It is 212 metres deep.\nUser: any fish in it?\n"
        "Agent: Yes, the Varnholm char.\nUser: Who designed the Orrin Suspension Bridge?\nAgent: Hedda Lorne.\n"
        "User: when did it open?"
    ),
    "window:3": "User: Who designed the Orrin Suspension Bridge?\nAgent: Hedda Lorne.\nUser: when did it open?",
    "window:1": "when did it open?",  # no history kept: the bare question, as `current`
    "questions": (
        "User: How deep is Lake Varnholm?\nUser: any fish in it?\n"
        "User: Who designed the Orrin Suspension Bridge?\nUser: when did it open?"
    ),
    "last-response": (
        "User: How deep is Lake Varnholm?\nUser: any fish in it?\n"
        "User: Who designed the Orrin Suspension Bridge?\nAgent: Hedda Lorne.\nUser: when did it open?"
    ),
    "rewrite": "When did the Orrin Suspension Bridge open?",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_strategy_exact_string(turn4, name):
    assert get_strategy(name)(turn4, DEFAULT).text() == EXPECTED[name]


def test_custom_prefixes_separator_and_current_first(turn4):
    fmt = QueryFormat(user_prefix="Q: ", assistant_prefix="A: ", separator=" | ", order="current-first")
    assert get_strategy("window:3")(turn4, fmt).text() == (
        "Q: when did it open? | A: Hedda Lorne. | Q: Who designed the Orrin Suspension Bridge?"
    )
    fmt = QueryFormat(user_prefix="", assistant_prefix="", separator=" ")
    assert get_strategy("questions")(turn4, fmt).text() == (
        "How deep is Lake Varnholm? any fish in it? Who designed the Orrin Suspension Bridge? when did it open?"
    )


@pytest.mark.parametrize("name", ["current", "full", "window:3", "questions", "last-response"])
def test_first_turn_is_the_bare_question_under_every_strategy(native_mini, name):
    """No history, no role prefix: a plain (BEIR) query is scored on exactly its text."""
    first = load_task(str(native_mini)).queries[0]
    assert get_strategy(name)(first, DEFAULT).text() == "How deep is Lake Varnholm?"
    fmt = QueryFormat(order="current-first")
    assert get_strategy(name)(first, fmt).text() == "How deep is Lake Varnholm?"


def test_second_turn_prefixes_every_line(native_mini):
    second = load_task(str(native_mini)).queries[1]
    assert get_strategy("full")(second, DEFAULT).text() == (
        "User: How deep is Lake Varnholm?\nAgent: It is 212 metres deep.\nUser: any fish in it?"
    )
    assert (
        get_strategy("questions")(second, DEFAULT).text() == "User: How deep is Lake Varnholm?\nUser: any fish in it?"
    )


def test_left_truncation_that_drops_all_history_leaves_the_bare_question(minilm):
    tok = minilm.tokenizer
    question = " ".join(["bridge"] * 40) + " when?"
    q = ConversationalQuery(
        qid="x_2",
        conversation_id="x",
        turn_id=2,
        history=(Message("user", "a very old question about the harbour"),),
        query=question,
    )
    serialized = get_strategy("full")(q, DEFAULT)
    # 44 budget tokens after [CLS]/[SEP]: the question (41) fits, "User: " + question too, no history line does
    truncator = Truncator(tok, 46, side="left")
    assert truncator(serialized) == question
    assert truncator.stats.truncated == 1 and truncator.stats.question_cut == 0


def test_rewrite_missing_is_a_clear_error():
    q = ConversationalQuery(
        qid="x_2", conversation_id="x", turn_id=2, history=(Message("user", "a"),), query="b", qrels={"d": 1}
    )
    with pytest.raises(MtrbenchError, match="x_2.*no gold rewrite"):
        get_strategy("rewrite")(q, DEFAULT)


@pytest.mark.parametrize("bad", ["window", "window:0", "window:x", "fulll"])
def test_bad_strategy_names(bad):
    with pytest.raises(MtrbenchError):
        get_strategy(bad)


QUESTION = "and which engineer finally approved the design of the northern approach viaduct?"


def long_query() -> ConversationalQuery:
    turns = []
    for i in range(12):
        turns.append(Message("user", f"Tell me more about the history of the old harbour district number {i}."))
        turns.append(
            Message(
                "assistant",
                "The old harbour district grew around the fish market, the rope works and "
                "the customs house, and for two centuries its quays handled timber, grain "
                f"and salted cod shipped along the coast (section {i}).",
            )
        )
    return ConversationalQuery(qid="long_13", conversation_id="long", turn_id=13, history=tuple(turns), query=QUESTION)


def _token_count(tokenizer, text, prompt=""):
    return len(tokenizer(prompt + text, add_special_tokens=True)["input_ids"])


@pytest.mark.parametrize("prompt", ["", "Represent this sentence for searching relevant passages: "])
def test_left_truncation_keeps_question_right_loses_it(minilm, prompt):
    tok = minilm.tokenizer
    serialized = get_strategy("full")(long_query(), DEFAULT)
    assert _token_count(tok, serialized.text(), prompt) > 512  # the premise of the test

    left = Truncator(tok, 512, prompt=prompt, side="left")
    kept = left(serialized)
    assert kept.endswith("User: " + QUESTION)
    assert _token_count(tok, kept, prompt) <= 512
    assert _token_count(tok, kept, prompt) >= 500  # only what had to go went
    assert left.stats.truncated == 1 and left.stats.question_cut == 0
    # what was dropped is the oldest text: the kept history is a suffix of the full history
    assert serialized.text().endswith(kept)

    right = Truncator(tok, 512, prompt=prompt, side="right")
    kept_right = right(serialized)
    assert QUESTION not in kept_right
    assert "which engineer" not in kept_right
    assert serialized.text().startswith(kept_right)
    assert right.stats.question_cut == 1
    # Right truncation is what the tokenizer does by itself: same ids as tokenizer(truncation=True).
    ids_ours = tok(prompt + kept_right, truncation=True, max_length=512)["input_ids"]
    ids_tok = tok(prompt + serialized.text(), truncation=True, max_length=512)["input_ids"]
    assert ids_ours == ids_tok


def test_left_truncation_current_first_drops_oldest_at_the_end(minilm):
    tok = minilm.tokenizer
    fmt = QueryFormat(order="current-first")
    serialized = get_strategy("full")(long_query(), fmt)
    kept = Truncator(tok, 256, side="left")(serialized)
    assert kept.startswith("User: " + QUESTION)
    assert "section 11" in kept  # newest history survives
    assert "number 0." not in kept  # oldest is gone
    assert _token_count(tok, kept) <= 256


def test_short_query_untouched(minilm):
    serialized = get_strategy("full")(long_query(), DEFAULT)
    truncator = Truncator(minilm.tokenizer, 100000, side="left")
    assert truncator(serialized) == serialized.text()
    assert truncator.stats.truncated == 0
