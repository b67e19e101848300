"""`mtrbench explore`: the data its pages embed, checked against the files results store and the task's own
files (read here with json, never through mtrbench), and its bad-input errors."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path

import pytest
from explore_support import INJECTED_DOC, INJECTION, MAX_LENGTH, embedded, queries, verdict

from mtrbench.cli import main
from mtrbench.data import load_task

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tasks" / "mtrbench-sample"
TOP_K = 10


def results_by_history(folder: Path) -> dict[str, Path]:
    out = {}
    for path in folder.rglob("mtrbench-sample.json"):
        document = json.loads(path.read_text())
        out[document["mtrbench"]["settings"]["history"]] = path
    return out


def per_query(result: Path) -> dict[str, dict]:
    document = json.loads(result.read_text())
    lines = result.with_name(document["mtrbench"]["files"]["per_query"]).read_text().splitlines()
    return {row["qid"]: row for row in map(json.loads, lines)}


def run_top(result: Path, k: int = TOP_K) -> dict[str, list[list]]:
    """qid -> the first k lines of the run file, as [doc, score] (the file is in rank order)."""
    document = json.loads(result.read_text())
    top: dict[str, list[list]] = defaultdict(list)
    for line in result.with_name(document["mtrbench"]["files"]["run"]).read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        if len(top[qid]) < k:
            top[qid].append([doc, float(score)])
    return top


def conversations(folder: Path = SAMPLE) -> list[dict]:
    return [json.loads(line) for line in (folder / "conversations" / "test.jsonl").read_text().splitlines()]


def corpus(folder: Path = SAMPLE) -> dict[str, dict]:
    return {r["_id"]: r for r in map(json.loads, (folder / "corpus.jsonl").read_text().splitlines())}


def test_list_page_has_every_conversation_and_switch(sample_site):
    data = embedded(sample_site / "index.html")
    raw = conversations()
    assert [c["id"] for c in data["conversations"]] == [c["conversation_id"] for c in raw]
    assert len(data["systems"]) == 6 and data["measure"] == "ndcg_at_10"
    for row, conversation in zip(data["conversations"], raw):
        users = [m["content"] for m in conversation["messages"] if m["role"] == "user"]
        assert len(row["turns"]) == len(users)
        assert row["switch"] == conversation["switch_turn"] + 1  # the first turn of the next topic
        assert [t["after"] for t in row["turns"]] == [n > conversation["switch_turn"] for n in range(1, len(users) + 1)]
        assert all(u in row["text"] for u in users)
        assert (sample_site / "conversations" / row["file"]).is_file()


def test_turn_numbers_and_top_k_equal_the_result_files(sample_site, sample_bm25_histories):
    results = results_by_history(sample_bm25_histories)
    rows = {h: per_query(p) for h, p in results.items()}
    tops = {h: run_top(p) for h, p in results.items()}
    listed = embedded(sample_site / "index.html")
    checked = 0
    for item in listed["conversations"]:
        page = embedded(sample_site / "conversations" / item["file"])
        histories = [s["history"] for s in page["systems"]]
        for turn, summary in zip(page["turns"], item["turns"]):
            for n, history in enumerate(histories):
                shown = turn["systems"][n]
                expected = rows[history][turn["qid"]]
                assert shown["scores"] == {k: expected[k] for k in page["measures"]}
                assert summary["s"][n] == expected["ndcg_at_10"]
                assert shown["top"] == tops[history][turn["qid"]]
                checked += 1
    assert checked == 6 * 214


def test_passages_grades_and_holes_come_from_the_task(sample_site):
    passages = corpus()
    grades = {}
    for conversation in conversations():
        users = [m for m in conversation["messages"] if m["role"] == "user"]
        for n, message in enumerate(users, 1):
            grades[(conversation["conversation_id"], n)] = {q["doc_id"]: q["score"] for q in message.get("qrels", [])}
    page = embedded(sample_site / "conversations" / "0001-geo-01.html")
    for doc, (title, snippet) in page["passages"].items():
        text = passages[doc]["text"]
        assert title == passages[doc]["title"]
        assert snippet == (text if len(text) <= 160 else text[:160].rstrip() + "\u2026")
    for turn in page["turns"]:
        judged = grades[("geo-01", turn["turn"])]
        shown = {doc for s in turn["systems"] for doc, _ in s["top"]}
        assert turn["grades"] == {d: g for d, g in judged.items() if d in shown}
        for s in turn["systems"]:
            assert s["unjudged"] == pytest.approx(sum(d not in judged for d, _ in s["top"]) / len(s["top"]))


def test_full_history_query_is_the_serialized_conversation(sample_site):
    """BM25 has no token limit: the query is the whole history, nothing struck out."""
    raw = conversations()[0]
    page = embedded(sample_site / "conversations" / "0001-geo-01.html")
    full = [s["history"] for s in page["systems"]].index("full")
    lines = []
    for turn, shown in zip(page["turns"], queries(page)):
        user_index = [i for i, m in enumerate(raw["messages"]) if m["role"] == "user"][turn["turn"] - 1]
        question = raw["messages"][user_index]["content"]
        prefix = {"user": "User: ", "assistant": "Agent: "}
        lines = [prefix[m["role"]] + m["content"] for m in raw["messages"][:user_index]]
        expected = "\n".join([*lines, f"User: {question}"]) if lines else question
        assert shown[full] == {"cut_before": "", "kept": expected, "cut_after": ""}


def test_truncated_queries_mark_the_cut_part(small_site, small_results, injected_sample):
    from transformers import AutoTokenizer

    tiny_result = next(p for p in small_results.rglob("mtrbench-sample.json") if "maxlen" in str(p))
    recorded = json.loads(tiny_result.read_text())["mtrbench"]
    tokenizer = AutoTokenizer.from_pretrained(recorded["model"]["requested"])
    listed = embedded(small_site / "index.html")
    tiny = [s["model"].startswith("tiny-") for s in listed["systems"]].index(True)  # a local folder: tiny-<hash>
    cut = 0
    for item in listed["conversations"]:
        page = embedded(small_site / "conversations" / item["file"])
        for turn, shown in zip(page["turns"], queries(page)):
            query = shown[tiny]
            assert len(tokenizer(query["kept"], add_special_tokens=False)["input_ids"]) <= int(MAX_LENGTH) - 2
            assert query["cut_after"] == ""  # left truncation cuts the oldest text only
            if query["cut_before"]:
                cut += 1
                assert query["kept"].endswith(f"User: {turn['utterance']}")  # left truncation keeps the question
                assert query["cut_before"].startswith("User: ")  # the oldest history went first
    assert cut == recorded["truncation"]["truncated"] > 0


def test_injected_markup_is_data_not_html(small_site):
    listed = embedded(small_site / "index.html")
    for item in listed["conversations"]:
        html = (small_site / "conversations" / item["file"]).read_text(encoding="utf-8")
        assert "<script>window" not in html and "<img" not in html
        data = embedded(small_site / "conversations" / item["file"])
        if INJECTED_DOC in data["passages"]:
            title, snippet = data["passages"][INJECTED_DOC]
            assert INJECTION in title
    assert any(
        INJECTED_DOC in embedded(small_site / "conversations" / i["file"])["passages"] for i in listed["conversations"]
    )


def test_rag_answers_citations_and_verdicts(small_site, small_results):
    report = next(small_results.rglob("*.rag.json"))
    generations = {
        g["qid"]: g for g in map(json.loads, report.with_name(json.loads(report.read_text())["generations"]).open())
    }
    listed = embedded(small_site / "index.html")
    rag = [s["generator"] for s in listed["systems"]].index("gen-m")
    answered = 0
    for item in listed["conversations"]:
        for turn in embedded(small_site / "conversations" / item["file"])["turns"]:
            answer = turn["systems"][rag]["answer"]
            generation = generations[turn["qid"]]
            assert answer["text"] == generation["answer"] and answer["passages"] == generation["passages"]
            assert answer["verdict"] == int(verdict(turn["utterance"]))
            answered += 1
    assert answered == len(generations) > 0


def test_corpus_ids_keep_only_those_passages_and_their_grades():
    wanted = {"geo-varnholm-formation", "geo-varnholm-dimensions"}
    task = load_task("mtrbench-sample", corpus_ids=wanted)
    assert set(task.corpus.ids) == wanted
    passages = corpus()
    for doc in wanted:
        i = task.corpus.position(doc)
        assert (task.corpus.titles[i], task.corpus.texts[i]) == (passages[doc]["title"], passages[doc]["text"])
    first = task.queries[0]
    assert first.qrels == {"geo-varnholm-formation": 2}


@pytest.fixture
def one_result(sample_bm25_histories, tmp_path) -> Path:
    source = results_by_history(sample_bm25_histories)["current"]
    folder = tmp_path / "copy"
    shutil.copytree(source.parent, folder, ignore=shutil.ignore_patterns("experiments"))
    return folder / source.name


@pytest.mark.parametrize("missing", ["run", "per_query"])
def test_a_missing_file_is_one_error_line(one_result, tmp_path, capsys, missing):
    document = json.loads(one_result.read_text())
    one_result.with_name(document["mtrbench"]["files"][missing]).unlink()
    capsys.readouterr()
    assert main(["explore", str(one_result), "-o", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "missing" in err[0] and str(one_result) in err[0]


def test_an_unknown_task_is_one_error_line(one_result, tmp_path, capsys):
    document = json.loads(one_result.read_text())
    document["task_name"] = "no-such-task"
    one_result.write_text(json.dumps(document))
    capsys.readouterr()
    assert main(["explore", str(one_result), "-o", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "no-such-task" in err[0]


def test_bad_options_and_inputs(tmp_path, capsys):
    assert main(["explore", str(tmp_path / "nothing"), "-o", str(tmp_path / "site")]) == 2
    assert main(["explore", str(tmp_path), "-o", str(tmp_path / "site")]) == 2  # a folder without results
    assert main(["explore", str(tmp_path), "-o", str(tmp_path / "site"), "--top-k", "0"]) == 2
    (tmp_path / "a-file").write_text("")
    assert main(["explore", str(tmp_path), "-o", str(tmp_path / "a-file")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all(line.startswith("error:") for line in err)
    assert "a-file: not a folder" in err[-1]
