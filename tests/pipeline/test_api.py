"""``mtrbench.evaluate`` with the user's own objects, each checked against an independent computation: the CLI's
named model, beir's own retriever and evaluator, pytrec_eval on the written run, and `mtrbench score`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from cli_run import CliRun, run_cli

import mtrbench

ROOT = Path(__file__).resolve().parents[2]


def readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- python-api-example[^>]*-->\s*```python\n(.*?)```", text, re.S)
    assert match, "README.md lost its Python API example"
    return match.group(1)


def cli(*args: str) -> CliRun:
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def pytrec_ndcg10(qrels: dict, run: dict) -> dict[str, float]:
    judged = {q: r for q, r in qrels.items() if any(g > 0 for g in r.values())}
    evaluator = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut.10"})
    return {q: v["ndcg_cut_10"] for q, v in evaluator.evaluate({q: run.get(q, {}) for q in judged}).items()}


@pytest.mark.slow
def test_readme_example_equals_the_cli_and_beir(tmp_path, monkeypatch, sample_cli_results):
    """The README's encoder object gives `mtrbench eval --model minilm`'s nDCG@10 (per query, 1e-6) and beir's
    `EvaluateRetrieval` over `DenseRetrievalExactSearch(same object)` on the sample's BEIR export.

    beir gets the object's own vectors for texts the README run already encoded (recorded per text), so the
    sample is encoded once on CPU; beir still reads the export's texts, searches and scores by itself, and a
    text that differs from what mtrbench encoded is encoded anew and counted."""
    monkeypatch.chdir(tmp_path)  # the example writes ./results: here, never in the checkout
    definitions, _, call = readme_example().partition("\n[result] = ")
    namespace: dict = {"__name__": "readme_example"}
    exec(compile(definitions, "README.md", "exec"), namespace)
    model_class = namespace["MeanPooledMiniLM"]
    seen: dict[str, np.ndarray] = {}
    encode = model_class._encode

    def recording_encode(self, texts):
        vectors = encode(self, texts)
        seen.update(zip(texts, vectors.numpy()))
        return vectors

    monkeypatch.setattr(model_class, "_encode", recording_encode)
    exec(compile("[result] = " + call, "README.md", "exec"), namespace)
    ours = namespace["result"]
    assert isinstance(ours, mtrbench.Result) and ours.main_score_key == "ndcg_at_10"
    assert ours.model_name == "my-minilm" and ours.settings["retriever"]["kind"] == "encoder"
    assert ours.truncation["truncated_share"] > 0.3  # left truncation applied through the object's tokenizer
    assert (tmp_path / "results").is_dir()

    # `mtrbench eval --history current,full` (tests/conftest.py): its `full` result
    [named] = [
        r for r in map(mtrbench.Result.load, sample_cli_results.rglob("mtrbench-sample.json")) if r.history == "full"
    ]
    assert ours.main_score == pytest.approx(named.main_score, abs=1e-6)
    theirs = named.per_query_values()
    for qid, values in ours.per_query_values().items():
        assert values["ndcg_at_10"] == pytest.approx(theirs[qid]["ndcg_at_10"], abs=1e-6), qid

    import torch
    from beir.datasets.data_loader import GenericDataLoader
    from beir.retrieval.evaluation import EvaluateRetrieval
    from beir.retrieval.search.dense import DenseRetrievalExactSearch

    fresh: list[str] = []

    def replaying_encode(self, texts):
        missing = [t for t in texts if t not in seen]
        fresh.extend(missing)
        if missing:
            seen.update(zip(missing, encode(self, missing).numpy()))
        return torch.from_numpy(np.stack([seen[t] for t in texts]))

    monkeypatch.setattr(model_class, "_encode", replaying_encode)
    export = tmp_path / "beir"
    cli("export", "mtrbench-sample", "--format", "beir", "--history", "full", "--model", "minilm", "--out", str(export))
    corpus, queries, qrels = GenericDataLoader(data_folder=str(export)).load(split="test")
    evaluation = EvaluateRetrieval(DenseRetrievalExactSearch(model_class(), batch_size=64), score_function="cos_sim")
    found = evaluation.retrieve(corpus, queries)
    ndcg, _, _, _ = evaluation.evaluate(qrels, found, [10])
    assert round(ours.main_score, 5) == pytest.approx(ndcg["NDCG@10"], abs=1e-9)
    assert len(fresh) < 5, f"{len(fresh)} exported texts differ from what mtrbench encoded"


# A small task built in code: two conversations, the second turn of each needs its history.
CORPUS = {
    "d-paris": {"title": "Paris", "text": "Paris is the capital of France and its largest city."},
    "d-paris-pop": "About two million people live in Paris, the French capital.",
    "d-berlin": "Berlin is the capital of Germany.",
    "d-berlin-pop": "Berlin has a population of roughly three point seven million people.",
    "d-tokyo": "Tokyo is the capital of Japan, a very large metropolis.",
}
CONVERSATIONS = {
    "c1": [
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "The capital of France is Paris."},
        {"role": "user", "content": "How many people live there?"},
    ],
    "c2": [
        {"role": "user", "content": "Which city is the capital of Germany?"},
        {"role": "assistant", "content": "Berlin."},
        {"role": "user", "content": "What is its population?"},
    ],
}
QRELS = {"c1_1": {"d-paris": 1}, "c1_2": {"d-paris-pop": 1}, "c2_1": {"d-berlin": 1}, "c2_2": {"d-berlin-pop": 1}}


@pytest.fixture()
def small_task():
    return mtrbench.make_task("small-python", CORPUS, CONVERSATIONS, QRELS)


def hashed_bag_of_words(text: str, dim: int = 64) -> np.ndarray:
    vector = np.zeros(dim, dtype=np.float32)
    for word in re.findall(r"[a-z]+", text.lower()):
        vector[sum(map(ord, word)) % dim] += 1.0
    return vector


def test_a_task_built_in_python_scores_as_pytrec_eval_on_its_run(small_task, tmp_path):
    [result] = mtrbench.evaluate("bm25", small_task, history="full", output_dir=tmp_path, show_progress=False)
    assert result.task_name == "small-python" and result.n_evaluated == 4
    per_query = pytrec_ndcg10(QRELS, result.run())
    assert result.per_query_values().keys() == per_query.keys()
    assert result.main_score == pytest.approx(sum(per_query.values()) / 4, abs=1e-12)
    assert 0 < result.main_score < 1  # the history makes some turns easy, some not


def test_a_conversation_encoder_receives_the_turns_not_a_string(small_task, tmp_path):
    class TurnReader:
        name = "turn-reader"

        def __init__(self):
            self.seen = []

        def encode_conversations(self, conversations):
            self.seen.extend(conversations)
            return np.stack([hashed_bag_of_words(" ".join(m.content for m in c.turns)) for c in conversations])

        def encode_corpus(self, corpus, **kwargs):
            return np.stack([hashed_bag_of_words(f"{d['title']} {d['text']}") for d in corpus])

    reader = TurnReader()
    [result] = mtrbench.evaluate(reader, small_task, output_dir=tmp_path, show_progress=False)
    by_qid = {c.qid: c for c in reader.seen}
    assert sorted(by_qid) == ["c1_1", "c1_2", "c2_1", "c2_2"]
    second = by_qid["c1_2"]
    assert isinstance(second, mtrbench.Conversation)
    assert [(m.role, m.content) for m in second.turns] == [(m["role"], m["content"]) for m in CONVERSATIONS["c1"]]
    assert second.question == "How many people live there?" and second.previous_questions == [
        "What is the capital of France?"
    ]
    assert not hasattr(second, "qrels") and not hasattr(second, "gold_rewrite")  # no judgment reaches the model
    assert result.settings["retriever"]["kind"] == "conversation-encoder"
    # the written run is what the vectors give (cosine, by hand) and scores as pytrec_eval says
    run = result.run()
    docs = list(CORPUS)
    doc_vectors = np.stack(
        [hashed_bag_of_words(d["title"] + " " + d["text"] if isinstance(d, dict) else d) for d in CORPUS.values()]
    )
    doc_vectors /= np.linalg.norm(doc_vectors, axis=1, keepdims=True)
    query = hashed_bag_of_words(" ".join(m["content"] for m in CONVERSATIONS["c1"]))
    expected = doc_vectors @ (query / np.linalg.norm(query))
    for doc, score in zip(docs, expected):
        if score > 0:
            assert run["c1_2"][doc] == pytest.approx(float(score), abs=1e-5)
    per_query = pytrec_ndcg10(QRELS, run)
    assert result.main_score == pytest.approx(sum(per_query.values()) / len(per_query), abs=1e-12)


def test_a_search_object_scores_as_mtrbench_score_on_its_run(native_mini, tmp_path):
    from mtrbench.data import load_task

    task = load_task(str(native_mini))
    fixed = {}
    for n, q in enumerate(task.queries):  # a deterministic run: rotate the corpus by the query's position
        ids = task.corpus.ids[n % len(task.corpus) :] + task.corpus.ids[: n % len(task.corpus)]
        fixed[q.qid] = {doc: float(len(ids) - rank) for rank, doc in enumerate(ids[:10])}
    fixed[task.queries[0].qid]["not-in-the-corpus"] = 0.5

    class FixedRun:
        name = "fixed-run"

        def __init__(self):
            self.indexed = None

        def index(self, corpus):
            self.indexed = corpus

        def search(self, queries, top_k):
            assert set(queries) == {q.qid for q in task.queries}
            return fixed

    engine = FixedRun()
    [result] = mtrbench.evaluate(
        engine, str(native_mini), history="current", output_dir=tmp_path / "r", show_progress=False
    )
    assert set(engine.indexed) == set(task.corpus.ids) and {"title", "text"} <= set(engine.indexed[task.corpus.ids[0]])
    assert result.warnings.get("retrieved document ids not in the corpus (dropped)") == 1
    without_unknown = {q: {d: s for d, s in docs.items() if d != "not-in-the-corpus"} for q, docs in fixed.items()}
    (tmp_path / "fixed.run").write_text(
        "".join(
            f"{q} Q0 {d} {r} {s} fixed\n"
            for q, docs in without_unknown.items()
            for r, (d, s) in enumerate(docs.items(), 1)
        )
    )
    (tmp_path / "qrels").write_text("".join(f"{q.qid} 0 {d} {g}\n" for q in task.queries for d, g in q.qrels.items()))
    proc = cli(
        "score",
        "--run",
        str(tmp_path / "fixed.run"),
        "--qrels",
        str(tmp_path / "qrels"),
        "--output",
        str(tmp_path / "score.json"),
    )
    scored = json.loads((tmp_path / "score.json").read_text())
    scores = scored.get("scores", scored)
    assert result.scores["ndcg_at_10"] == pytest.approx(scores["ndcg_at_10"], abs=1e-12), proc.stdout


def test_a_python_history_gives_the_builtin_run_and_is_recorded_by_name(native_mini, tmp_path):
    def bare_question(conversation):
        return conversation.question

    class QuestionsRewriter:
        name = "all-questions"

        def rewrite(self, conversation):
            return "\n".join(f"User: {q}" for q in [*conversation.previous_questions, conversation.question])

    results = mtrbench.evaluate(
        "bm25",
        str(native_mini),
        history=["current", bare_question, "questions", QuestionsRewriter()],
        output_dir=tmp_path,
        show_progress=False,
    )
    current, python, questions, rewriter = results
    assert python.history.startswith("python:") and python.history.endswith("bare_question")
    assert python.settings["rewriter"] == {
        "kind": "python",
        "name": python.history.removeprefix("python:"),
        "queries": python.n_evaluated + python.n_excluded,
    }
    assert python.run() == current.run() and python.scores == current.scores
    assert rewriter.history == "python:all-questions"
    assert rewriter.run() == questions.run() and rewriter.scores == questions.scores
    assert python.path != current.path and rewriter.path != questions.path  # each its own result file


def test_a_sentence_transformer_object_equals_the_alias(native_mini, tmp_path, minilm):
    from sentence_transformers import SentenceTransformer

    model = minilm.model  # the offline MiniLM, loaded once per session
    [ours] = mtrbench.evaluate(
        model, str(native_mini), history="full", output_dir=tmp_path / "o", device="cpu", show_progress=False
    )
    [named] = mtrbench.evaluate(
        "minilm", str(native_mini), history="full", output_dir=tmp_path / "n", device="cpu", show_progress=False
    )
    assert ours.settings["retriever"]["kind"] == "dense" and ours.settings["truncate"] == "left"
    assert ours.scores == pytest.approx(named.scores, abs=1e-6)
    assert isinstance(model, SentenceTransformer)


def test_finished_results_are_loaded_for_names_and_recomputed_for_objects(native_mini, tmp_path):
    [first] = mtrbench.evaluate("bm25", str(native_mini), history="current", output_dir=tmp_path, show_progress=False)
    stamp = first.path.stat().st_mtime_ns
    [again] = mtrbench.evaluate("bm25", str(native_mini), history="current", output_dir=tmp_path, show_progress=False)
    assert again.path == first.path and again.path.stat().st_mtime_ns == stamp  # loaded, not rewritten
    assert again.scores == first.scores and again.per_query_values() == first.per_query_values()


class NamedBagOfWords:
    """An encoder whose name does not change with its width: two of them are different models of one name."""

    name = "my-encoder"

    def __init__(self, dim: int, revision: str | None = None):
        self.dim, self.queries = dim, 0
        if revision is not None:
            self.revision = revision

    def encode_queries(self, queries, **kwargs):
        self.queries += len(queries)
        return np.stack([hashed_bag_of_words(q, self.dim) for q in queries])

    def encode_corpus(self, corpus, **kwargs):
        return np.stack([hashed_bag_of_words(f"{d['title']} {d['text']}", self.dim) for d in corpus])


@pytest.mark.parametrize("overwrite", [None, "only-missing"])
def test_two_model_objects_of_one_name_never_reuse_each_others_result(small_task, tmp_path, overwrite):
    wide, narrow = NamedBagOfWords(64), NamedBagOfWords(3)
    [first] = mtrbench.evaluate(wide, small_task, output_dir=tmp_path, overwrite=overwrite, show_progress=False)
    [second] = mtrbench.evaluate(narrow, small_task, output_dir=tmp_path, overwrite=overwrite, show_progress=False)
    assert narrow.queries == 4  # evaluated, not read back from the first object's file
    per_query = pytrec_ndcg10(QRELS, second.run())
    assert second.main_score == pytest.approx(sum(per_query.values()) / 4, abs=1e-12)
    assert second.main_score != pytest.approx(first.main_score)  # the two really differ on this task
    with pytest.raises(mtrbench.MtrbenchError, match="declares no `revision`"):
        mtrbench.evaluate(NamedBagOfWords(64), small_task, output_dir=tmp_path, overwrite="never", show_progress=False)


def test_a_model_object_with_a_revision_is_reused_under_its_name_and_revision_only(small_task, tmp_path):
    def run(model: NamedBagOfWords):
        return mtrbench.evaluate(model, small_task, output_dir=tmp_path, overwrite="only-missing", show_progress=False)

    [first] = run(NamedBagOfWords(64, revision="v1"))
    again = NamedBagOfWords(64, revision="v1")
    [reused] = run(again)
    assert again.queries == 0 and reused.path == first.path and reused.scores == first.scores
    other = NamedBagOfWords(3, revision="v2")
    [second] = run(other)
    assert other.queries == 4 and second.path != first.path


def test_objects_of_no_known_shape_and_bad_vectors_are_one_clear_error(small_task, tmp_path):
    with pytest.raises(mtrbench.ModelError, match="cannot evaluate a object"):
        mtrbench.evaluate(object(), small_task, output_dir=tmp_path, show_progress=False)

    class WrongRows:
        def encode_queries(self, queries, **kwargs):
            return np.ones((len(queries) + 1, 4))

        def encode_corpus(self, corpus, **kwargs):
            return np.ones((len(corpus), 4))

    with pytest.raises(mtrbench.ModelError, match=r"encode_queries returned shape \(5, 4\) for 4 inputs"):
        mtrbench.evaluate(WrongRows(), small_task, output_dir=tmp_path, show_progress=False)
    with pytest.raises(mtrbench.UserInputError, match="history"):
        mtrbench.evaluate("bm25", small_task, history=[42], output_dir=tmp_path, show_progress=False)


def test_an_encoder_object_with_a_revision_is_cached_and_searched_streamed_as_in_memory(small_task, tmp_path):
    """The adapter is an embedding retriever like any other: with a revision its corpus embeddings go to the
    cache (the second run encodes no document) and the streamed search gives the in-memory run."""

    class Counting:
        name, revision = "bow", "r1"

        def __init__(self):
            self.documents = 0

        def encode_queries(self, queries, **kwargs):
            return np.stack([hashed_bag_of_words(q) for q in queries])

        def encode_corpus(self, corpus, **kwargs):
            self.documents += len(corpus)
            return np.stack([hashed_bag_of_words(f"{d['title']} {d['text']}") for d in corpus])

    cache = tmp_path / "cache"
    first, second = Counting(), Counting()
    [memory] = mtrbench.evaluate(
        first, small_task, output_dir=tmp_path / "a", cache_dir=str(cache), show_progress=False
    )
    [streamed] = mtrbench.evaluate(
        second, small_task, output_dir=tmp_path / "b", cache_dir=str(cache), search_memory=4096, show_progress=False
    )
    assert first.documents == len(CORPUS) and second.documents == 0
    assert streamed.settings["retriever"]["search_execution"]["mode"] == "streaming"
    run_a, run_b = memory.run(), streamed.run()
    assert run_a.keys() == run_b.keys()
    for qid in run_a:
        assert run_a[qid].keys() == run_b[qid].keys()
        for doc, score in run_a[qid].items():
            assert run_b[qid][doc] == pytest.approx(score, abs=1e-6)
    assert streamed.scores == pytest.approx(memory.scores, abs=1e-12)
