"""`--ptkb top:K`'s encoder similarity is the cosine of the question and each statement (higher: nearer), so the
statements rank nearest first. A stand-in for sentence-transformers returns fixed unit vectors (no model loaded,
no torch imported); the cosines are worked out by hand."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from mtrbench.data.model import ConversationalQuery
from mtrbench.pipeline.ptkb import encoder_similarity
from mtrbench.serialize.ptkb import parse_ptkb, rank_statements

VECTORS = {
    "where do I live?": [1.0, 0.0],
    "I own a cat.": [0.0, 1.0],  # cosine 0
    "I live in Leiden.": [0.8, 0.6],  # cosine 0.8
    "I moved last year.": [0.6, 0.8],  # cosine 0.6
}


class _Encoder:
    def __init__(self, name: str, device: str) -> None:
        self.name = name

    def encode(self, texts: list[str], normalize_embeddings: bool, convert_to_numpy: bool) -> np.ndarray:
        assert normalize_embeddings and convert_to_numpy
        return np.array([VECTORS[t] for t in texts])


def test_statements_rank_by_cosine_nearest_first(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", types.SimpleNamespace(SentenceTransformer=_Encoder))
    choice = parse_ptkb("top:2@fake-encoder")
    assert choice is not None
    similarity = encoder_similarity("fake-encoder", choice)
    statements = ["I own a cat.", "I live in Leiden.", "I moved last year."]
    assert similarity("where do I live?", statements) == pytest.approx([0.0, 0.8, 0.6])
    query = ConversationalQuery(
        "t_1",
        "t",
        1,
        (),
        "where do I live?",
        meta={"ptkb": {"1": statements[0], "2": statements[1], "3": statements[2]}},
    )
    assert rank_statements([query], similarity, choice) == {"t_1": ("2", "3", "1")}
    assert choice.with_ranking({"t_1": ("2", "3", "1")}).statement_ids(query) == ["2", "3"]
