"""Result truth for model objects given to `mtrbench.evaluate`: an encoder object that holds a sentence-transformers
model but no `tokenizer` of its own is truncated with that model's tokenizer and max_seq_length (not cut by the model
itself, unrecorded); with `truncate="none"` the result counts the queries the model will cut; an object with no
tokenizer anywhere is evaluated with a warning."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from tiny_model import make_tiny_model

import mtrbench

MAX_SEQ_LENGTH = 16
CORPUS = {
    "d1": "Paris is the capital of France and its largest city.",
    "d2": "About two million people live in Paris, the French capital.",
    "d3": "Berlin is the capital of Germany.",
}
CONVERSATIONS = {
    "c1": [
        {"role": "user", "content": "What is the capital of France, the country in western Europe?"},
        {"role": "assistant", "content": "The capital of France is Paris, on the Seine."},
        {"role": "user", "content": "How many people live there?"},
    ],
    "c2": [
        {"role": "user", "content": "Which city is the capital of Germany?"},
        {"role": "assistant", "content": "Berlin."},
        {"role": "user", "content": "Is it big?"},
    ],
}
QRELS = {"c1_1": {"d1": 1}, "c1_2": {"d2": 1}, "c2_1": {"d3": 1}, "c2_2": {"d3": 1}}


def full_history_texts() -> list[str]:
    """Each turn as `--history full` serializes it: the bare question on a first turn, else the history first with
    'User: '/'Agent: ' prefixes, one message a line."""
    texts = []
    for turns in CONVERSATIONS.values():
        lines: list[str] = []
        for message in turns:
            if message["role"] == "user":
                texts.append("\n".join([*lines, "User: " + message["content"]]) if lines else message["content"])
            lines.append(("User: " if message["role"] == "user" else "Agent: ") + message["content"])
    return texts


@pytest.fixture(scope="module")
def tiny_st(tmp_path_factory):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(make_tiny_model(tmp_path_factory.mktemp("tiny"))), device="cpu")
    model.max_seq_length = MAX_SEQ_LENGTH
    return model


class Wrapper:
    """A user's encoder that hands texts to the sentence-transformers model it holds, with no tokenizer attribute."""

    name = "wrapped-tiny"

    def __init__(self, model) -> None:
        self.model = model

    def encode_queries(self, queries, **kwargs):
        return self.model.encode(list(queries), convert_to_numpy=True)

    def encode_corpus(self, corpus, **kwargs):
        return self.model.encode([d["text"] for d in corpus], convert_to_numpy=True)


def over_the_limit(model) -> int:
    budget = MAX_SEQ_LENGTH - model.tokenizer.num_special_tokens_to_add(pair=False)
    return sum(len(model.tokenizer(t, add_special_tokens=False)["input_ids"]) > budget for t in full_history_texts())


def test_a_wrapped_sentence_transformer_truncates_with_its_tokenizer(tiny_st, tmp_path):
    task = mtrbench.make_task("wrapped", CORPUS, CONVERSATIONS, QRELS)
    expected = over_the_limit(tiny_st)
    assert expected >= 2  # the fixture makes the full-history queries longer than the model reads
    [result] = mtrbench.evaluate(Wrapper(tiny_st), task, history="full", output_dir=tmp_path, show_progress=False)
    assert result.settings["truncate"] == "left"
    assert result.settings["retriever"]["max_length"] == MAX_SEQ_LENGTH
    assert result.truncation["truncated"] == expected
    assert "over_model_limit" not in result.truncation


def test_truncate_none_counts_what_the_model_cuts_itself(tiny_st, tmp_path):
    task = mtrbench.make_task("wrapped", CORPUS, CONVERSATIONS, QRELS)
    [result] = mtrbench.evaluate(
        Wrapper(tiny_st), task, history="full", truncate="none", output_dir=tmp_path, show_progress=False
    )
    assert result.settings["truncate"] == "none"
    assert result.truncation["truncated"] == 0
    assert result.truncation["over_model_limit"] == over_the_limit(tiny_st)
    assert result.truncation["over_model_limit_share"] == pytest.approx(over_the_limit(tiny_st) / 4, abs=1e-5)


def test_an_encoder_without_any_tokenizer_is_evaluated_with_a_warning(tmp_path, caplog):
    class Hashed:
        name = "hashed"

        def encode_queries(self, queries, **kwargs):
            return np.array([[len(q), 1.0] for q in queries], dtype=np.float32)

        def encode_corpus(self, corpus, **kwargs):
            return np.array([[len(d["text"]), 1.0] for d in corpus], dtype=np.float32)

    task = mtrbench.make_task("hashed", CORPUS, CONVERSATIONS, QRELS)
    with caplog.at_level(logging.WARNING, logger="mtrbench"):
        [result] = mtrbench.evaluate(Hashed(), task, history="full", output_dir=tmp_path, show_progress=False)
    assert any("hashed has no tokenizer" in r.getMessage() for r in caplog.records)
    assert result.settings["truncate"] == "none" and result.settings["retriever"]["max_length"] is None
