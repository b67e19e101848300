"""Query expansion (``--history query2doc | hyde | mugi``) in ``mtrbench eval`` against the scripted chat server:
the query BM25 searches with is the one each paper builds from the question and the model's passages (checked
by searching hand-built texts with BM25 directly), each strategy is its own result, a malformed reply is asked
again, a killed run resumes without asking an answered request again, and too many failures exit 1."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedChatServer

from mtrbench.cli import main
from mtrbench.data import load_task
from mtrbench.formats.run import read_run


def passage(question: str, n: int = 0) -> str:
    """The scripted model's passage for a question: words of the question, then corpus words that vary by n."""
    return f"{question} Lake Varnholm char bridge designed opened {'depth metres' if n % 2 else 'traffic 1931'}"


class ScriptedExpander:
    def __init__(self, malformed_once: bool = False) -> None:
        self.asked: list[str] = []
        self.mugi: list[str] = []
        self.malformed_once = malformed_once

    def __call__(self, body: dict) -> Reply:
        question = re.search(r"\nCurrent question: (.*)$", body["messages"][-1]["content"]).group(1)
        system = body["messages"][0]["content"]
        self.asked.append(question)
        if "Passage 1:" in system:  # MuGI: three passages
            self.mugi.append(question)
            if self.malformed_once and self.mugi.count(question) == 1:
                return Reply("Here are some thoughts about it, in no particular form.")
            return Reply("\n".join(f"Passage {n}: {passage(question, n)}" for n in (1, 2, 3)))
        return Reply(f"Passage: {passage(question)}")


def eval_args(task: Path, out: Path, history: str, url: str, *extra: str) -> list[str]:
    return [
        "eval",
        "--model",
        "bm25",
        "--task",
        str(task),
        "--history",
        history,
        "--output-dir",
        str(out),
        "--quiet",
        "--rewriter-model",
        "exp-model",
        "--rewriter-base-url",
        url,
        "--yes",
        "--concurrency",
        "1",
        *extra,
    ]


def by_hand(kind: str, question: str) -> str:
    if kind == "query2doc":  # the question five times, then the passage
        return " ".join([question] * 5 + [passage(question)])
    if kind == "hyde":
        return passage(question)
    docs = [passage(question, n) for n in (1, 2, 3)]
    repeats = max(1, (len(" ".join(docs).split()) // len(question.split())) // 5)
    return " ".join([question] * repeats + docs)


def test_expansions_search_the_papers_query_texts_and_are_results_of_their_own(native_mini, tmp_path, capsys):
    from mtrbench.retrieve import build_retriever

    task = load_task(str(native_mini))
    expander = ScriptedExpander(malformed_once=True)
    with ScriptedChatServer(expander) as server:
        args = eval_args(
            native_mini, tmp_path, "current,query2doc,hyde,mugi", server.base_url, "--llm-cache", str(tmp_path / "c")
        )
        assert main(args) == 0
    capsys.readouterr()
    # every turn is asked (a first turn too), once per kind; MuGI's malformed first replies are asked again
    assert len(expander.asked) == 3 * 5 + 5
    bm25 = build_retriever("bm25", show_progress=False)
    bm25.index(task.corpus)
    folders = {p.parent.name: p for p in tmp_path.rglob("native-mini.json")}
    assert len(folders) == 4  # current, query2doc, hyde, mugi: four results, none sharing a folder
    recorded = {}
    for kind in ("query2doc", "hyde", "mugi"):
        [path] = [p for name, p in folders.items() if f"history={kind}" in name]
        settings = json.loads(path.read_text())["mtrbench"]["settings"]
        assert settings["history"] == kind and settings["rewriter"]["kind"] == kind
        recorded[kind] = settings["rewriter"]["prompt_hash"]
        run = read_run(path.with_name("native-mini.run.trec"))
        hits = bm25.search([by_hand(kind, q.query) for q in task.queries], top_k=10)
        for q, (docs, scores) in zip(task.queries, hits):
            expected = {task.corpus.ids[d]: s for d, s in zip(docs, scores)}
            assert run[q.qid] == pytest.approx(expected, abs=1e-4)
    assert len(set(recorded.values())) == 3
    [current] = [p for name, p in folders.items() if "history=current" in name]
    assert "rewriter" not in json.loads(current.read_text())["mtrbench"]["settings"]


def test_a_killed_expansion_resumes_without_asking_an_answered_request_again(
    native_mini, tmp_path, monkeypatch, capsys
):
    from mtrbench.llm.cache import ResponseCache

    put = ResponseCache.put
    stored: list[str] = []

    def killed_on_the_third(self, key, record):
        if len(stored) == 2:
            raise KeyboardInterrupt  # the run dies as the third reply arrives
        stored.append(key)
        put(self, key, record)

    expander = ScriptedExpander()
    with ScriptedChatServer(expander) as server:
        args = eval_args(native_mini, tmp_path, "hyde", server.base_url, "--llm-cache", str(tmp_path / "cache"))
        monkeypatch.setattr(ResponseCache, "put", killed_on_the_third)
        assert main(args) != 0 and "interrupted" in capsys.readouterr().err
        assert len(expander.asked) == 3
        monkeypatch.setattr(ResponseCache, "put", put)
        first = list(expander.asked)
        assert main(args) == 0
    again = expander.asked[len(first) :]
    assert sorted(again) == sorted(set(q.query for q in load_task(str(native_mini)).queries) - set(first[:2]))
    capsys.readouterr()


def test_expansion_failing_past_the_limit_exits_1_with_one_line(native_mini, tmp_path, capsys):
    # a reply without a 'Passage:' label reads as the passage: an empty one is malformed
    with ScriptedChatServer(lambda body: Reply("   ")) as server:
        code = main(eval_args(native_mini, tmp_path / "empty", "query2doc", server.base_url, "--no-llm-cache"))
    assert code == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "--history query2doc" in errors[0] and "5 of 5" in errors[0]
    assert not list((tmp_path / "empty").rglob("native-mini.json"))
