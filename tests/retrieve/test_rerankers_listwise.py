"""The listwise LLM reranker (``--rerank listwise:MODEL``) against the scripted chat server: the server orders
each window by a rule, and the test slides the same windows over the first stage's run file by hand (bottom up,
window 3, stride 2); replies that leave ids out, name one twice or name one outside the window, a malformed
reply asked again, a killed run resumed without asking an answered window again, and too many failures."""

from __future__ import annotations

import json
import re

from llm_server import Reply, ScriptedChatServer

from mtrbench.cli import main
from mtrbench.data import load_task
from mtrbench.formats.run import read_run

WINDOW, STRIDE, DEPTH = 3, 2, 5


def passages_of(body: dict) -> tuple[str, list[str]]:
    user = body["messages"][-1]["content"]
    query = re.search(r"^Search query: (.*)$", user, re.M).group(1)
    return query, re.findall(r"^\[[0-9]+\] (.*)$", user, re.M)


def rule(passages: list[str]) -> list[int]:
    """The scripted model's order: longest passage first, ties by number."""
    return sorted(range(1, len(passages) + 1), key=lambda n: (-len(passages[n - 1]), n))


class ScriptedRanker:
    def __init__(self, malformed_query: str = "", sloppy_query: str = "") -> None:
        self.asked: list[str] = []
        self.malformed_query, self.sloppy_query = malformed_query, sloppy_query

    def __call__(self, body: dict) -> Reply:
        query, passages = passages_of(body)
        self.asked.append(query)
        if query == self.malformed_query and self.asked.count(query) == 1:
            return Reply("They all look relevant to me.")
        order = rule(passages)
        if query == self.sloppy_query:  # the best named twice, an unknown [9], the rest left out
            return Reply(f"[{order[0]}] > [9] > [{order[0]}]")
        return Reply(" > ".join(f"[{n}]" for n in order))


def args_for(task, out, url, *extra):
    return [
        "eval",
        "--model",
        "bm25",
        "--limit",
        "2",
        "--history",
        "current",
        "--top-k",
        "10",
        "--k",
        "1,5,10",
        "--output-dir",
        str(out),
        "--quiet",
        *(["--rerank", "listwise:rank-model", "--reranker-base-url", url] if url else []),
        "--rerank-k",
        str(DEPTH),
        "--rerank-window",
        str(WINDOW),
        "--rerank-stride",
        str(STRIDE),
        "--yes",
        "--concurrency",
        "1",
        *extra,
    ]


def run_order(path, qid):
    scores = read_run(path)[qid]
    return sorted(scores, key=lambda d: (-scores[d], [-ord(c) for c in d]))


def by_hand(first: list[str], texts: dict[str, str], sloppy: bool) -> list[str]:
    order = list(first)
    for start in (2, 0):  # 5 documents, window 3, stride 2: [2:5] then [0:3]
        window = order[start : start + WINDOW]
        ranked = rule([texts[d] for d in window])
        if sloppy:
            ranked = ranked[:1] + [n for n in range(1, len(window) + 1) if n != ranked[0]]
        order[start : start + WINDOW] = [window[n - 1] for n in ranked]
    return order


def test_listwise_applies_each_windows_permutation_bottom_up(tmp_path, capsys):
    task = load_task("mtrbench-sample")
    assert main(args_for(None, tmp_path / "first", None)) == 0
    [first_run] = (tmp_path / "first").rglob("mtrbench-sample.run.trec")
    qids = sorted(read_run(first_run))
    questions = {q.qid: q.query for q in task.queries if q.qid in qids}
    assert len(questions) == len(qids) >= 4 and len(set(questions.values())) == len(qids)
    ranker = ScriptedRanker(malformed_query=questions[qids[0]], sloppy_query=questions[qids[1]])
    with ScriptedChatServer(ranker) as server:
        assert main(args_for(None, tmp_path / "lw", server.base_url, "--no-llm-cache")) == 0
    [result] = (tmp_path / "lw").rglob("mtrbench-sample.json")
    texts = {d: task.corpus.document_text(i) for i, d in enumerate(task.corpus.ids)}
    # a window's passages are its documents' first words, in the order of the list so far
    for qid in questions:
        first = run_order(first_run, qid)
        head = by_hand(first[:DEPTH], {d: " ".join(texts[d].split()[:120]) for d in first}, qid == qids[1])
        # below --rerank-k the first stage's order
        assert run_order(result.with_name("mtrbench-sample.run.trec"), qid) == head + first[DEPTH:], qid
    # two windows per query, one malformed reply asked again
    assert len(ranker.asked) == 2 * len(questions) + 1
    rerank = json.loads(result.read_text())["mtrbench"]["settings"]["retriever"]["rerank"]
    assert (rerank["kind"], rerank["model"], rerank["window"], rerank["stride"], rerank["rerank_k"]) == (
        "listwise",
        "rank-model",
        WINDOW,
        STRIDE,
        DEPTH,
    )
    assert f"listwise-rank-model-w{WINDOW}s{STRIDE}" in str(result)
    capsys.readouterr()


def test_a_killed_listwise_run_resumes_without_asking_an_answered_window_again(tmp_path, monkeypatch, capsys):
    from mtrbench.llm.cache import ResponseCache

    put = ResponseCache.put
    stored: list[str] = []

    def killed_on_the_fourth(self, key, record):
        if len(stored) == 3:
            raise KeyboardInterrupt
        stored.append(key)
        put(self, key, record)

    ranker = ScriptedRanker()
    with ScriptedChatServer(ranker) as server:
        args = args_for(None, tmp_path, server.base_url, "--llm-cache", str(tmp_path / "cache.sqlite"))
        monkeypatch.setattr(ResponseCache, "put", killed_on_the_fourth)
        assert main(args) != 0 and "interrupted" in capsys.readouterr().err
        assert len(ranker.asked) == 4
        monkeypatch.setattr(ResponseCache, "put", put)
        assert main(args) == 0
    windows = 2 * len(read_run(next(tmp_path.rglob("mtrbench-sample.run.trec"))))
    # the 3 windows answered before the kill are never asked again
    assert len(ranker.asked) == 4 + windows - 3
    capsys.readouterr()


def test_listwise_failing_past_the_limit_exits_1_with_one_line(tmp_path, capsys):
    with ScriptedChatServer(lambda body: Reply("no idea")) as server:
        code = main(args_for(None, tmp_path, server.base_url, "--no-llm-cache", "--parse-retries", "0"))
    assert code == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "rank-model" in errors[0] and re.search(r"([0-9]+) of \1 windows", errors[0])


def test_reply_rules_counted_through_the_api(native_mini):
    """One window of native-mini's four passages: a reply naming [2], an unknown [9] and [2] again puts passage 2
    first and the three it left out after it in their order; bare numbers are read too."""
    from mtrbench.llm.config import judge_from_flags
    from mtrbench.retrieve import build_retriever
    from mtrbench.retrieve.rerank_listwise import ListwiseLLM

    task = load_task(str(native_mini))
    query = "Lake Varnholm depth char Orrin Suspension Bridge designed opened"
    for reply, expected_counts in (("[2] > [9] > [2]", (1, 1, 3)), ("4 > 1 > 3 > 2", (0, 0, 0))):
        with ScriptedChatServer(lambda body, reply=reply: Reply(reply)) as server:
            judge = judge_from_flags("rank-model", server.base_url, "UNSET_KEY_ENV", name="reranker")
            retriever = build_retriever(
                "bm25",
                rerank="listwise:rank-model",
                rerank_k=4,
                rerank_window=4,
                rerank_llm=ListwiseLLM(judge, None, yes=True, show_progress=False),
                show_progress=False,
            )
            retriever.index(task.corpus)
            first = retriever.first_lists([query], 4)[0]
            [(docs, _)] = retriever.search([query], top_k=4)
        assert len(first) == 4 and server.request_count == 1
        named = [2] if reply.startswith("[2]") else [4, 1, 3, 2]
        assert docs == [first[n - 1] for n in named] + [d for d in first if d not in [first[n - 1] for n in named]]
        c = retriever.counts
        assert (c.unknown_ids, c.duplicate_ids, c.missing_ids, c.windows, c.failed) == (*expected_counts, 1, 0)


def test_listwise_bad_flags_are_one_error_line(tmp_path, capsys):
    base = ["eval", "--model", "bm25", "--limit", "1", "--quiet", "--output-dir", str(tmp_path)]
    cases = {
        "--reranker-base-url goes with --rerank listwise:MODEL": ["--reranker-base-url", "http://127.0.0.1:9/v1"],
        "--rerank-window 4 --rerank-stride 4": [
            *("--rerank", "listwise:m", "--reranker-base-url", "http://127.0.0.1:9/v1"),
            *("--rerank-window", "4", "--rerank-stride", "4", "--yes"),
        ],
        "--dry-run: --rerank listwise": ["--rerank", "listwise:m", "--reranker-base-url", "http://x/v1", "--dry-run"],
    }
    for message, extra in cases.items():
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and message in err and "\n" not in err, err
