"""mteb interoperability: our result JSON is an mteb TaskResult; our tasks run through mteb.evaluate."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import pytest
import pytrec_eval

# mteb creates its result cache folder when imported; keep it out of the user's home.
os.environ.setdefault("MTEB_CACHE", str(Path(tempfile.gettempdir()) / "mtrbench-tests-mteb-cache"))

from mtrbench.formats.run import read_run  # noqa: E402
from mtrbench.infra.errors import MtrbenchError  # noqa: E402
from mtrbench.pipeline.evaluate import EvalConfig, run_eval  # noqa: E402
from mtrbench.retrieve import RetrieverOptions  # noqa: E402

try:
    import mteb
except ImportError:
    mteb = None

BGE_PROMPT = "Represent this sentence for searching relevant passages: "


@pytest.fixture(scope="module")
def mm():
    """mtrbench.interop.mteb; mteb is in the test extras, so CI must never skip these."""
    if mteb is None:
        if os.environ.get("CI"):
            pytest.fail("mteb is not installed (pip install '.[test]')")
        pytest.skip("mteb is not installed")
    return importlib.import_module("mtrbench.interop.mteb")


def conversations(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "conversations" / "test.jsonl").read_text().splitlines()]


def judged(folder: Path) -> dict[str, dict[str, int]]:
    """qid -> qrels straight from the native files (qid = <conversation>_<user turn>)."""
    out = {}
    for conv in conversations(folder):
        users = [m for m in conv["messages"] if m["role"] == "user"]
        for turn, message in enumerate(users, 1):
            out[f"{conv['conversation_id']}_{turn}"] = {j["doc_id"]: j["score"] for j in message.get("qrels") or []}
    return out


def test_import_mteb_inside_mtrbench_mteb_is_the_real_package(mm):
    assert mm.mteb is sys.modules["mteb"]
    assert "site-packages" in mm.mteb.__file__ and Path(mm.mteb.__file__).parent.name == "mteb"


def test_missing_mteb_is_a_one_line_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "mteb", None)  # what `import mteb` sees when it is not installed
    monkeypatch.delitem(sys.modules, "mtrbench.interop.mteb", raising=False)
    with pytest.raises(MtrbenchError) as info:
        importlib.import_module("mtrbench.interop.mteb")
    assert isinstance(info.value, ImportError)
    message = str(info.value)
    assert "\n" not in message and "pip install 'mtrbench[mteb]'" in message


def test_result_json_loads_as_mteb_task_result(mm, native_mini, tmp_path):
    [result] = run_eval(
        "bm25", str(native_mini), EvalConfig(output_dir=tmp_path / "results"), RetrieverOptions.of(show_progress=False)
    )
    path = result.path
    document = json.loads(path.read_text())
    loaded = mteb.TaskResult.from_disk(path)

    # nDCG@10 re-scored independently from the written run and the fixture's own qrels
    positives = {q: d for q, d in judged(native_mini).items() if any(g > 0 for g in d.values())}
    run = read_run(path.with_name("native-mini.run.trec"))
    direct = pytrec_eval.RelevanceEvaluator(positives, {"ndcg_cut.10"}).evaluate({q: run.get(q, {}) for q in positives})
    expected = sum(v["ndcg_cut_10"] for v in direct.values()) / len(direct)

    assert loaded.task_name == document["task_name"] == native_mini.name
    [subset] = loaded.scores["test"]
    assert subset["ndcg_at_10"] == document["scores"]["test"][0]["ndcg_at_10"] == pytest.approx(expected)
    assert loaded.main_score == subset["main_score"] == pytest.approx(expected)  # the card's main score: ndcg_at_10
    assert subset["hf_subset"] == "default" and subset["languages"] == ["eng-Latn"]
    assert loaded.mteb_version == metadata.version("mteb") and loaded.dataset_revision == "local"
    assert loaded.evaluation_time == document["evaluation_time"] > 0 and loaded.date is not None
    assert "mtrbench" in document and "mtrbench" not in loaded.model_dump()  # mteb ignores our extras

    # the result fits the mteb task made from the same data (same name, split, subset)
    [task] = mm.get_tasks([str(native_mini)], truncate="none")
    filtered = loaded.validate_and_filter_scores(task=task)
    assert filtered.scores["test"][0]["main_score"] == pytest.approx(expected)
    # and mteb's result cache finds it: our output folder is laid out as <cache>/results
    found = mteb.ResultCache(tmp_path).load_results(tasks=[task], require_model_meta=False, include_remote=False)
    [model_results] = list(found)
    assert (model_results.model_name, model_results.model_revision) == ("bm25", path.parent.name)
    assert [r.task_name for r in model_results.task_results] == [native_mini.name]


def test_result_json_without_mteb_claims_a_version_its_reader_loads_as_is(monkeypatch, tmp_path):
    from mtrbench.results import writer

    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(writer.metadata, "version", not_installed)
    document = writer.result_document(
        task_name="a-task-mteb-does-not-know",
        dataset_revision=None,
        split="test",
        languages=["eng"],
        main_score_key="ndcg_at_10",
        scores={"ndcg_at_10": 0.25},
        evaluation_time=1.0,
        extra={"date": "2026-01-02T03:04:05Z"},
    )
    assert document["mteb_version"] == writer.MTEB_RESULT_FORMAT_VERSION
    path = tmp_path / "a-task-mteb-does-not-know.json"
    path.write_text(json.dumps(document))
    if mteb is None:
        pytest.skip("mteb is not installed")
    loaded = mteb.TaskResult.from_disk(path)
    assert loaded.main_score == 0.25 and loaded.date.year == 2026
    # one patch release older, mteb's reader looks the task up in its registry and fails: why the minimum
    path.write_text(json.dumps({**document, "mteb_version": "1.12.47"}))
    with pytest.raises(KeyError):
        mteb.TaskResult.from_disk(path)


def test_tasks_exclude_queries_without_positives_like_mtrbench_eval(mm, native_mini, tmp_path):
    folder = tmp_path / "mini-plus"
    shutil.copytree(native_mini, folder)
    extra = {
        "conversation_id": "c2",
        "messages": [
            {"role": "user", "content": "Tell me about the bridge.", "qrels": [{"doc_id": "orrin-open", "score": 0}]},
            {"role": "assistant", "content": "Which one?"},
            {
                "role": "user",
                "content": "When did the Orrin bridge open?",
                "qrels": [{"doc_id": "orrin-open", "score": 1}],
            },
        ],
    }
    with (folder / "conversations" / "test.jsonl").open("a") as handle:
        handle.write(json.dumps(extra) + "\n")
    gold = judged(folder)
    positives = {q: d for q, d in gold.items() if any(g > 0 for g in d.values())}
    assert len(gold) - len(positives) == 2  # c1_5 has no qrels, c2_1 only a grade-0 judgment

    [task] = mm.get_tasks([str(folder)], truncate="none", history="questions")
    assert task.metadata.name == "mini-plus__history=questions"  # non-default settings get their own name
    md = task.metadata
    assert (md.type, md.main_score, md.eval_splits, md.category) == ("Retrieval", "ndcg_at_10", ["test"], "t2t")
    assert md.dataset == {"path": str(folder.resolve()), "revision": "local"}
    from mteb.languages import check_language_code

    for code in md.eval_langs:
        check_language_code(code)  # raises on an invalid code
    task.load_data()
    data = task.dataset["default"]["test"]
    assert sorted(data["queries"]["id"]) == sorted(positives)
    assert data["relevant_docs"] == positives
    assert sorted(data["corpus"]["id"]) == ["orrin-design", "orrin-open", "varn-depth", "varn-fish"]
    # `questions`: previous user questions, then the current one, role-prefixed
    text = dict(zip(data["queries"]["id"], data["queries"]["text"]))["c2_2"]
    assert text == "User: Tell me about the bridge.\nUser: When did the Orrin bridge open?"

    [ours] = run_eval(
        "bm25", str(folder), EvalConfig(output_dir=tmp_path / "results"), RetrieverOptions.of(show_progress=False)
    )
    assert task.excluded_without_positives == {"test": ours.n_excluded} == {"test": 2}


def test_every_retrieval_card_makes_valid_mteb_metadata(mm):
    from mteb.languages import check_language_code

    from mtrbench.data.cards import all_cards

    cards = [card for card in all_cards().values() if "retrieval" in card.type]
    tasks = mm.get_tasks([card.name for card in cards], truncate="none")  # metadata only: no data is loaded
    # MTR-SUITE's official serialization (the default of its cards) changes the texts: a name of its own
    official_texts = {c.name for c in cards if c.official_protocol == "mtr-suite" and c.protocol == "official"}
    assert official_texts  # mtr-bench, mtr-bench-8turn
    assert [t.metadata.name for t in tasks] == [
        card.name + ("__protocol=official" if card.name in official_texts else "") for card in cards
    ]
    assert len(tasks) >= 20
    for task, card in zip(tasks, cards):
        md = task.metadata
        assert (md.type, md.main_score, md.eval_splits) == ("Retrieval", card.main_score, [card.eval_split])
        assert md.dataset["path"] == (card.source.hub or str(card.local_path()))
        for code in md.eval_langs:
            check_language_code(code)
    with pytest.raises(MtrbenchError, match="not a retrieval task"):
        mm.get_tasks(["rad-bench"], truncate="none")


def test_binary_measures_use_the_cards_relevance_level(mm, native_mini, tmp_path):
    card = tmp_path / "graded.yaml"
    card.write_text(
        f"name: graded\ndescription: judged at level 2\nformat: mtrbench\nsource:\n  path: {native_mini}\n"
        f"splits: [test]\neval_split: test\nk_values: [1, 10]\nrelevance_level: 2\n"
    )
    [task] = mm.get_tasks([str(card)], truncate="none")
    qrels = {"q": {"a": 1, "b": 2}}
    run = {"q": {"a": 0.9, "b": 0.5, "c": 0.1}}
    scores = task.task_specific_scores({}, qrels, run, hf_split="test", hf_subset="default")
    # only b (grade 2) counts as relevant; it is ranked second
    assert scores["recall_at_1"] == 0.0 and scores["recall_at_10"] == 1.0
    assert scores["mrr_at_10"] == 0.5 and scores["hit_rate_at_1"] == 0.0 and scores["precision_at_10"] == 0.1
    assert "ndcg_at_10" not in scores  # graded nDCG stays mteb's


def test_left_truncation_fits_the_prompt_and_keeps_the_question(mm, minilm):
    [task] = mm.get_tasks(["mtrbench-sample"], model=minilm.model, query_prompt=BGE_PROMPT, max_length=64)
    assert task.metadata.name == "mtrbench-sample__maxlen=64"
    task.load_data()
    queries = task.dataset["default"]["test"]["queries"]
    tokenizer = minilm.tokenizer
    from mtrbench.data import load_task

    questions = {q.qid: q.query for q in load_task("mtrbench-sample").queries}
    for qid, text in zip(queries["id"], queries["text"]):
        assert len(tokenizer(BGE_PROMPT + text)["input_ids"]) <= 64, qid  # special tokens included
        # a first turn (no history) is the bare question; later turns end with its prefixed line
        assert text == questions[qid] if qid.endswith("_1") else text.endswith("\nUser: " + questions[qid]), qid
    stats = task.truncation["test"]
    assert stats["queries"] == len(questions) and stats["truncated"] > 100 and stats["question_cut"] == 0


def test_get_tasks_refuses_to_truncate_blind(mm):
    with pytest.raises(MtrbenchError, match="tokenizer"):
        mm.get_tasks(["mtrbench-sample"])
    with pytest.raises(MtrbenchError, match="unknown history strategy"):
        mm.get_tasks(["mtrbench-sample"], history="everything", truncate="none")


@pytest.mark.slow
def test_mteb_evaluate_gives_the_ndcg_of_mtrbench_eval(mm, minilm, tmp_path):
    """Same model, serialization (history=full, left truncation), corpus text and qrels. Both paths run at
    64 tokens (a quarter of MiniLM's 256) to cut the encoding time on 2 CPU cores; more queries get truncated."""
    max_length = 64
    [ours] = run_eval(
        "minilm",
        "mtrbench-sample",
        EvalConfig(output_dir=tmp_path / "results"),
        RetrieverOptions.of(device="cpu", show_progress=False, max_length=max_length),
    )
    document = json.loads(ours.path.read_text())

    model = minilm.model
    saved = model.max_seq_length
    model.max_seq_length = max_length  # the session fixture: restored below
    try:
        tasks = mm.get_tasks(["mtrbench-sample"], model=model, history="full", truncate="left", max_length=max_length)
        outcome = mteb.evaluate(
            model,
            tasks,
            cache=None,
            show_progress_bar=False,
            encode_kwargs={"batch_size": 32, "show_progress_bar": False},
            prediction_folder=tmp_path / "predictions",
        )
    finally:
        model.max_seq_length = saved
    [theirs] = outcome.task_results
    [subset] = theirs.scores["test"]
    print(f"\nnDCG@10 mtrbench eval {ours.scores['ndcg_at_10']:.6f}  mteb.evaluate {subset['ndcg_at_10']:.6f}")
    # mteb rounds its scores to 5 decimals; the rankings are the same
    assert subset["ndcg_at_10"] == pytest.approx(ours.scores["ndcg_at_10"], abs=1e-4)
    assert subset["main_score"] == subset["ndcg_at_10"]
    # the mteb task is named like mtrbench's experiment folder for these settings
    assert document["mtrbench"]["experiment"] == f"maxlen={max_length}"
    assert theirs.task_name == f"{document['task_name']}__{document['mtrbench']['experiment']}"
    # the same queries were scored, serialized and truncated the same way
    predictions = json.loads(next((tmp_path / "predictions").glob("*.json")).read_text())["default"]["test"]
    assert len(predictions) == ours.n_evaluated == 214 - ours.n_excluded
    assert tasks[0].truncation["test"] == document["mtrbench"]["truncation"]
    assert document["mtrbench"]["truncation"]["truncated"] > 100


@pytest.mark.parametrize("protocol, prefixed", [(None, True), ("trec_eval", False)])
def test_mtr_tasks_follow_the_protocols_serialization_and_name_it(mm, shared, protocol, prefixed):
    """MTR-BENCH defaults to the official MTR-SUITE protocol: its first turns reach mteb as "User: q" (by hand), as
    eval searches them, under a task name of their own (mteb's cache must not hand back the bare-question
    scores); protocol="trec_eval" gives the bare question under the plain name."""
    data = shared / "datasets/fixtures/mtr/mtr-qwen35-fp8-12turn"
    [task] = mm.get_tasks("mtr-bench", truncate="none", data_dir=str(data), protocol=protocol)
    assert task.metadata.name == ("mtr-bench__protocol=official" if prefixed else "mtr-bench")
    task.load_data()
    split = task.eval_splits[0]
    data_split = task.dataset["default"][split]
    texts = dict(zip(data_split["queries"]["id"], data_split["queries"]["text"]))
    from mtrbench.data import load_task

    first = [q for q in load_task("mtr-bench", split=split, data_dir=data).queries if not q.history and q.qid in texts]
    assert first
    assert all(texts[q.qid] == ("User: " + q.query if prefixed else q.query) for q in first)
    with pytest.raises(MtrbenchError, match="offical"):
        mm.get_tasks("mtr-bench", truncate="none", protocol="offical")
