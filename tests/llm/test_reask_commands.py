"""Every LLM-using command, run whole, succeeds on its first re-ask of a malformed reply (issue 25, item d).

A real chat-completions server on 127.0.0.1 (tests/llm_server.py) answers each item (a request as first asked:
its model and messages, without a trailing repair turn) with a malformed reply the first time and with a good
one only if a later request for that item differs from the first; an identical request gets the malformed
reply again. Every command runs as ``mtrbench.cli.main([...])`` with ``--max-retries 0`` and the default
parse retries, with the argv builders of tests/llm/test_failure_exits.py where it has one. Checked per command:

- exit 0 and no ``error:`` line;
- exactly two requests per item, the item count worked out by hand from the fixture (never read back from the
  command), and every second request equal to the first plus one user message at the end: the repair turn,
  quoting the malformed reply without the API key;
- what the command wrote holds the good replies' values (each decided by the server from the request, so a
  reply landing on the wrong item or field is seen), nothing from the malformed text, and the logs that keep
  malformed replies keep them redacted: the API key (set in the variable the commands read, and put inside the
  malformed text where the command logs malformed text) is in no file, no request body and no output.

Off-format text is a valid reply where the reply is free text (an answer, a summary, a responder's answer
longer than 20 characters): there the malformed reply is empty (or too short to be an answer), so it carries
no key.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from llm_server import Reply, ScriptedChatServer
from test_failure_exits import (
    AUDIT_ALIGNMENT_ITEMS,
    KEY_ENV,
    TURNS,
    TURNS_WITH_GOLD,
    TURNS_WITH_HISTORY,
    _audit,
    _eval,
    _generate,
    _jsonl,
    _judge,
    _llm_flags,
    _rag,
    _synthesize,
    clustered,  # noqa: F401 (module-scoped fixture: the curated, clustered corpus)
)

from mtrbench.cli import main
from mtrbench.llm.reask import REPAIR_OPENING, without_repair

SECRET = "sk-test-REASKCMD-4e8b1f07a2"
REDACTED = "[redacted]"
# A reply in no format any command asks for, carrying the key: it must be logged with the key redacted.
OFF_FORMAT = f"Happy to help with that.\nThere is a lot one could say here (key {SECRET}).\nLet me know what else."
EMPTY = ""  # the malformed reply where any text is a valid reply

# native-mini by hand (tests/data/native-mini/conversations/test.jsonl): each user turn's question, its gold
# documents (grade >= 1, highest first) and the gold documents' text (corpus.jsonl). c1_5 "thanks!" has none.
QUESTIONS = {
    "c1_1": "How deep is Lake Varnholm?",
    "c1_2": "any fish in it?",
    "c1_3": "Who designed the Orrin Suspension Bridge?",
    "c1_4": "when did it open?",
    "c1_5": "thanks!",
}
GOLD = {"c1_1": ["varn-depth"], "c1_2": ["varn-fish"], "c1_3": ["orrin-design"], "c1_4": ["orrin-open", "orrin-design"]}
TEXT = {
    "varn-depth": "Lake Varnholm reaches a maximum depth of 212 metres.",
    "varn-fish": "The Varnholm char lives only in Lake Varnholm.",
    "orrin-design": "The Orrin Suspension Bridge was designed by Hedda Lorne.",
    "orrin-open": "The Orrin Suspension Bridge opened to traffic in 1931.",
}
QID_OF = {question: qid for qid, question in QUESTIONS.items()}
WRONG_TURN = "c1_2"  # judged INCORRECT: a turn with gold, so both verdicts occur and RAGAlign's r is defined

# Items per command, by hand from native-mini (two requests each):
GENERATE_ITEMS = TURNS_WITH_GOLD  # generate --oracle: one answer per turn with a gold passage (c1_1..c1_4)
JUDGE_ITEMS = TURNS  # judge run: one verdict/rating per generated turn with a reference answer (all 5)
RAG_ITEMS = TURNS + TURNS  # rag: 5 answers (the retrieval result has every turn), then 5 verdicts
AUDIT_COMPLETENESS_ITEMS = 4  # one per query with gold (c1_1..c1_4), each given one negative by NEGATIVES_RUN
AUDIT_ITEMS = AUDIT_ALIGNMENT_ITEMS + AUDIT_COMPLETENESS_ITEMS  # 5 (turn, gold document) pairs + 4 = 9
# assess: the pooled pairs the task does not judge (ASSESS_RUN: c1_1 varn-fish, c1_3 orrin-open; c1_1 varn-depth
# is judged and dropped), each debated by Agent A and Agent B, who agree in round 1: 2 x 2 = 4
ASSESS_PAIRS = {("c1_1", "varn-fish"): True, ("c1_3", "orrin-open"): False}  # the good verdict: relevant?
ASSESS_ITEMS = 2 * len(ASSESS_PAIRS)
SYNTH_CONVERSATIONS, SYNTH_TURNS = 1, 2
SYNTH_ITEMS = SYNTH_CONVERSATIONS * SYNTH_TURNS * 3  # questioner, responder, polisher per turn = 6
EVAL_ITEMS = TURNS_WITH_HISTORY  # a rewrite or summary per turn with an earlier turn (c1_2..c1_5); c1_1 none

# hard negatives for audit's completeness (one per query with gold) and the runs assess pools
NEGATIVES_RUN = (
    "c1_1 Q0 varn-fish 1 1.0 neg\nc1_2 Q0 varn-depth 1 1.0 neg\nc1_3 Q0 orrin-open 1 1.0 neg\n"
    "c1_4 Q0 varn-fish 1 1.0 neg\n"
)
ASSESS_RUN = "c1_1 Q0 varn-fish 1 2.0 pool\nc1_1 Q0 varn-depth 2 1.0 pool\nc1_3 Q0 orrin-open 1 1.0 pool\n"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)  # the variable _llm_flags names with --api-key-env


def _item(body: dict[str, Any]) -> str:
    """The item a request asks about: its model and its messages as first asked (a repair turn left off)."""
    return json.dumps({"model": body.get("model"), "messages": without_repair(body["messages"])}, sort_keys=True)


class MalformedThenGoodIfChanged:
    """Per item, the first request gets ``malformed(body)``; a later one gets ``good(body)`` only if its body
    differs from that first request's, else ``malformed(body)`` again. Both see the request as first asked."""

    def __init__(self, good: Callable[[dict[str, Any]], str], malformed: Callable[[dict[str, Any]], str]) -> None:
        self.good, self.malformed = good, malformed
        self.first: dict[str, str] = {}
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        shown = {**body, "messages": without_repair(body["messages"])}
        serialized = json.dumps(body, sort_keys=True)
        with self.lock:
            first = self.first.setdefault(_item(body), serialized)
        return Reply(self.malformed(shown) if serialized == first else self.good(shown))


def _text(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"])


def _after(text: str, marker: str) -> str:
    """The rest of the line after the last ``marker``."""
    return text.rsplit(marker, 1)[1].split("\n", 1)[0].strip()


# --- good replies, decided from the request -------------------------------------------------------------------


def _answer(body: dict[str, Any]) -> str:
    """generate/rag: an answer naming its own question (the generation prompt ends with it)."""
    return f"About '{_after(_text(body), 'Current question: ')}': see [1]."


def _verdict(body: dict[str, Any]) -> str:
    question = _after(_text(body), "[Current question]\n")
    return f"Checked.\nVerdict: [[{'INCORRECT' if QID_OF[question] == WRONG_TURN else 'CORRECT'}]]"


def _rating_of(qid: str) -> int:
    return 2 + int(qid[-1])  # c1_1 -> 3 ... c1_5 -> 7: each turn its own rating


def _rating(body: dict[str, Any]) -> str:
    question = _after(_text(body), "[Current question]\n")
    return f"Justified.\nRating: [[{_rating_of(QID_OF[question])}]]"


def _rag_reply(body: dict[str, Any]) -> str:
    return _verdict(body) if "[End of current question]" in _text(body) else _answer(body)


def _rag_malformed(body: dict[str, Any]) -> str:
    return OFF_FORMAT if "[End of current question]" in _text(body) else EMPTY  # an answer is free text


AUDIT_RATING = 4


def _audit_reply(body: dict[str, Any]) -> str:
    """alignment: a rating; completeness: the number of the shown document holding the query's first gold one."""
    text = _text(body)
    if "Document ID: [N]" not in text:
        return f"Aligned.\nRating: {AUDIT_RATING}"
    gold = TEXT[GOLD[QID_OF[_after(text, "Question: ")]][0]]
    shown = text.split("\n[")[1:]  # "[N] title\ntext" blocks
    [number] = [block.split("]", 1)[0] for block in shown if gold in block]
    return f"That one.\nDocument ID: [{number}]"


def _assess_reply(body: dict[str, Any]) -> str:
    doc = _text(body).split("<doc>\n", 1)[1].split("\n</doc>", 1)[0]
    [relevant] = [ASSESS_PAIRS[pair] for pair in ASSESS_PAIRS if TEXT[pair[1]] in doc]
    return json.dumps(
        {
            "reference": [doc.splitlines()[-1]],
            "reason": "The passage states it.",
            "response": "yes" if relevant else "no",
        }
    )


def _model_history(label: str) -> Callable[[dict[str, Any]], str]:
    """rewrite:llm / summary:llm: the text of the turn's first gold document (so BM25 ranks it first)."""

    def reply(body: dict[str, Any]) -> str:
        text = _text(body)
        marker = "Last question: " if label == "Rewrite" else "Current question: "
        qid = QID_OF[_after(text, marker)]
        return f"{label}: {TEXT[GOLD[qid][0]] if qid in GOLD else 'You are welcome.'}"

    return reply


SYNTH_GOOD = {
    "questioner": "[Document 1] Which detail does this reference text give about its subject?",
    "responder": "The reference text gives this detail plainly, and nothing more is needed here.",
    "polisher": "So what detail is that?",
}
SYNTH_MALFORMED = {"questioner": OFF_FORMAT, "responder": "Sure.", "polisher": OFF_FORMAT}  # an answer < 20 chars


def _agent(body: dict[str, Any]) -> str:
    from mtrbench.synthesize import prompts

    system = body["messages"][0]["content"]
    return {
        prompts.QUESTIONER_SYSTEM: "questioner",
        prompts.RESPONDER_SYSTEM: "responder",
        prompts.POLISHER_SYSTEM: "polisher",
    }[system]


# --- argv of the commands test_failure_exits has no builder for, or needs otherwise ---------------------------


def _judge_rating(work: Path, url: str, mini: Path) -> list[str]:
    args = _judge(work, url, mini)
    at = args.index("--ragalign")  # RAGAlign takes verdicts only
    args = args[:at] + args[at + 2 :]
    args[args.index("verdict")] = "rating"
    return args


def _audit_both(work: Path, url: str, mini: Path) -> list[str]:
    (work / "negatives.trec").write_text(NEGATIVES_RUN)
    return [
        *_audit(work, url, mini),
        "--dimensions",
        "alignment,completeness",
        "--negatives",
        "1",
        "--negatives-run",
        str(work / "negatives.trec"),
    ]


def _assess(work: Path, url: str, mini: Path) -> list[str]:
    (work / "pool.trec").write_text(ASSESS_RUN)
    return [
        "assess",
        str(mini),
        "--runs",
        str(work / "pool.trec"),
        "--llm-model",
        "judge-m",
        "--llm-base-url",
        url,
        "--output-dir",
        str(work / "assess"),
        "--quiet",
        *_llm_flags(url, work),
    ]


def _synthesize_small(work: Path, url: str, mini: Path) -> list[str]:
    args = _synthesize(work, url, mini)
    args[args.index("--conversations") + 1] = str(SYNTH_CONVERSATIONS)
    args[args.index("--turns") + 1] = str(SYNTH_TURNS)
    return args


# --- what each command wrote ------------------------------------------------------------------------------------


def _redacted(text: str) -> str:
    return text.replace(SECRET, REDACTED)


def _generation_malformed_checked(records: list[dict]) -> None:
    # an answer record may keep its malformed replies (redacted): here the one empty reply
    assert all([(m["attempt"], m["text"]) for m in r.get("malformed", [])] in ([], [(1, EMPTY)]) for r in records)


def _check_generate(work: Path) -> None:
    records = _jsonl(work / "gen.jsonl")
    assert {r["qid"]: r["answer"] for r in records} == {qid: f"About '{QUESTIONS[qid]}': see [1]." for qid in GOLD}
    _generation_malformed_checked(records)
    assert not (work / "gen.failures.jsonl").exists() or _jsonl(work / "gen.failures.jsonl") == []


def _judge_log_checked(log: Path, keys: list[str]) -> None:
    records = _jsonl(log)
    assert sorted(r["key"] for r in records) == sorted(keys)
    for record in records:
        assert record["ok"] and record["attempts"] == 2
        assert [(m["attempt"], m["text"]) for m in record["malformed"]] == [(1, _redacted(OFF_FORMAT))]


def _check_judge(work: Path) -> None:
    expected = {qid: 0 if qid == WRONG_TURN else 1 for qid in QUESTIONS}
    scores = json.loads((work / "judge" / "scores.json").read_text())
    assert {qid: row["verdict"] for qid, row in scores["per_turn"].items()} == expected
    assert scores["judge"]["counts"]["answered"] == JUDGE_ITEMS
    assert scores["judge"]["accuracy"] == 0.8  # 4 of 5 judged CORRECT
    assert {r["qid"]: r["label"] for r in _jsonl(work / "judge" / "verdicts.jsonl")} == expected
    _judge_log_checked(work / "judge" / "judgments.jsonl", [f"g|{qid}" for qid in QUESTIONS])


def _check_judge_rating(work: Path) -> None:
    ratings = {r["qid"]: r for r in _jsonl(work / "judge" / "ratings.jsonl")}
    assert {qid: r["rating"] for qid, r in ratings.items()} == {qid: _rating_of(qid) for qid in QUESTIONS}
    _judge_log_checked(work / "judge" / "judgments.jsonl", [f"g|{qid}" for qid in QUESTIONS])


def _check_rag(work: Path) -> None:
    [report] = list((work / "results").rglob("*.rag.json"))
    document = json.loads(report.read_text())
    assert document["complete"] is True and document["failed_stage"] is None
    assert document["generation"]["failed"] == 0 and document["judge"]["counts"]["answered"] == TURNS
    assert {qid: row["verdict"] for qid, row in document["per_turn"].items()} == {
        qid: 0 if qid == WRONG_TURN else 1 for qid in QUESTIONS
    }
    assert document["ragalign"]["ragalign_ndcg_at_10"]["value"] is not None
    [generations] = list((work / "results").rglob("*.generations.jsonl"))
    assert {r["qid"]: r["answer"] for r in _jsonl(generations)} == {
        qid: f"About '{question}': see [1]." for qid, question in QUESTIONS.items()
    }
    _generation_malformed_checked(_jsonl(generations))
    [log] = list((work / "results").rglob("judgments.jsonl"))
    _judge_log_checked(log, [f"gen-m|{qid}" for qid in QUESTIONS])


def _check_synthesize(work: Path) -> None:
    [record] = _jsonl(work / "work" / "generate" / "conversations.log.jsonl")
    assert record["status"] == "done" and len(record["turns"]) == SYNTH_TURNS
    for turn in record["turns"]:
        assert turn["standalone"] == SYNTH_GOOD["questioner"].removeprefix("[Document 1] ")
        assert (turn["answer"], turn["question"]) == (SYNTH_GOOD["responder"], SYNTH_GOOD["polisher"])
    malformed = [(m["agent"], m["attempt"], m["text"]) for m in record["malformed"]]
    assert sorted(malformed) == sorted(
        (agent, 1, _redacted(text)) for agent, text in SYNTH_MALFORMED.items() for _ in range(SYNTH_TURNS)
    )
    [conversation] = _jsonl(work / "work" / "task" / "conversations" / "test.jsonl")
    users = [m for m in conversation["messages"] if m["role"] == "user"]
    assistants = [m for m in conversation["messages"] if m["role"] == "assistant"]
    assert [m["content"] for m in users] == [SYNTH_GOOD["polisher"]] * SYNTH_TURNS
    assert [m["content"] for m in assistants] == [SYNTH_GOOD["responder"]] * SYNTH_TURNS


def _check_audit(work: Path) -> None:
    summary = json.loads((work / "audit" / "summary.json").read_text())
    [alignment] = summary["aggregates"]["alignment"].values()
    [completeness] = summary["aggregates"]["completeness"].values()
    assert (alignment["n"], alignment["mean"], alignment["failures"]) == (AUDIT_ALIGNMENT_ITEMS, AUDIT_RATING, 0)
    assert (completeness["n"], completeness["mean"], completeness["failures"]) == (AUDIT_COMPLETENESS_ITEMS, 1.0, 0)
    records = _jsonl(work / "audit" / "log.jsonl")
    assert len(records) == AUDIT_ITEMS and all(r["ok"] and r["attempts"] == 2 for r in records)
    picks = {r["qid"]: r["picked_doc"] for r in records if r["dimension"] == "completeness"}
    assert picks == {qid: gold[0] for qid, gold in GOLD.items()}
    assert all([(m["attempt"], m["text"]) for m in r["malformed"]] == [(1, _redacted(OFF_FORMAT))] for r in records)


def _check_assess(work: Path) -> None:
    from mtrbench.formats.qrels import read_qrels

    debates = [r for r in _jsonl(work / "assess" / "assessments.jsonl") if r["kind"] == "debate"]
    assert {(r["qid"], r["doc_id"]): (r["status"], r["label"], r["consensus_round"]) for r in debates} == {
        pair: ("consensus", relevant, 1) for pair, relevant in ASSESS_PAIRS.items()
    }
    for record in debates:
        assert sorted((m["by"], m["attempt"], m["text"]) for m in record["malformed"]) == [
            ("Agent A round 1", 1, _redacted(OFF_FORMAT)),
            ("Agent B round 1", 1, _redacted(OFF_FORMAT)),
        ]
    # the task's judgments kept, and the two debated pairs added: relevant at the task's top grade (2), else 0
    assert read_qrels(work / "assess" / "refined_qrels.trec") == {
        "c1_1": {"varn-depth": 2, "varn-fish": 2},
        "c1_2": {"varn-fish": 2},
        "c1_3": {"orrin-design": 2, "orrin-open": 0},
        "c1_4": {"orrin-open": 2, "orrin-design": 1},
    }


def _check_eval(history: str) -> Callable[[Path], None]:
    def check(work: Path) -> None:
        [result] = list((work / "results").rglob("native-mini.json"))
        rewriter = json.loads(result.read_text())["mtrbench"]["settings"]["rewriter"]
        assert (rewriter["requested"], rewriter["failures"], rewriter["http_requests"]) == (
            EVAL_ITEMS,
            0,
            2 * EVAL_ITEMS,
        )
        per_query = {r["qid"]: r for r in _jsonl(result.with_name("native-mini.per_query.jsonl"))}
        # the good texts are the gold documents' own: BM25 ranks each gold document first
        assert all(per_query[qid]["hit_rate_at_1"] == 1.0 for qid in ("c1_2", "c1_3", "c1_4")), per_query
        malformed = OFF_FORMAT if history == "rewrite:llm" else EMPTY
        log = {r["qid"]: r for r in _jsonl(result.with_name("native-mini.rewriter.jsonl"))}
        assert sorted(log) == ["c1_2", "c1_3", "c1_4", "c1_5"]
        assert all(
            r["ok"] and [(m["attempt"], m["text"]) for m in r["malformed"]] == [(1, _redacted(malformed))]
            for r in log.values()
        )

    return check


@dataclass
class Case:
    name: str
    args: Callable[[Path, str, Path], list[str]]  # (work folder, server URL, native-mini) -> argv
    items: int  # by hand: each gets two requests
    good: Callable[[dict[str, Any]], str]
    malformed: Callable[[dict[str, Any]], str]
    check_outputs: Callable[[Path], None]
    catches: str  # the plausible bug this case fails on


CASES = [
    Case(
        "generate",
        _generate,
        GENERATE_ITEMS,
        _answer,
        lambda body: EMPTY,
        _check_generate,
        "an empty answer written as the answer, or never re-asked; an answer filed under another turn",
    ),
    Case(
        "judge run verdict",
        _judge,
        JUDGE_ITEMS,
        _verdict,
        lambda body: OFF_FORMAT,
        _check_judge,
        "the verdict parser rejecting a good verdict; the re-ask sent unchanged; the key logged with the reply",
    ),
    Case(
        "judge run rating",
        _judge_rating,
        JUDGE_ITEMS,
        _rating,
        lambda body: OFF_FORMAT,
        _check_judge_rating,
        "ratings re-asked without the rating format, or rated from the malformed reply",
    ),
    Case(
        "rag",
        _rag,
        RAG_ITEMS,
        _rag_reply,
        _rag_malformed,
        _check_rag,
        "a stage (generation or judging) that does not re-ask, or scores the first reply",
    ),
    Case(
        "synthesize",
        _synthesize_small,
        SYNTH_ITEMS,
        lambda body: SYNTH_GOOD[_agent(body)],
        lambda body: SYNTH_MALFORMED[_agent(body)],
        _check_synthesize,
        "an agent's reply put in another agent's field; a conversation dropped after one malformed reply",
    ),
    Case(
        "audit",
        _audit_both,
        AUDIT_ITEMS,
        _audit_reply,
        lambda body: OFF_FORMAT,
        _check_audit,
        "a completeness pick read from the malformed text, or the re-ask not restating 'Document ID: [N]'",
    ),
    Case(
        "assess",
        _assess,
        ASSESS_ITEMS,
        _assess_reply,
        lambda body: OFF_FORMAT,
        _check_assess,
        "a debate failed (escalated) on one malformed JSON verdict; the label not taken from the re-ask",
    ),
    Case(
        "eval rewrite:llm",
        _eval("rewrite:llm"),
        EVAL_ITEMS,
        _model_history("Rewrite"),
        lambda body: OFF_FORMAT,
        _check_eval("rewrite:llm"),
        "a query left out (or given the raw question) after one malformed rewrite",
    ),
    Case(
        "eval summary:llm",
        _eval("summary:llm"),
        EVAL_ITEMS,
        _model_history("Summary"),
        lambda body: EMPTY,
        _check_eval("summary:llm"),
        "an empty summary taken as the summary instead of re-asked",
    ),
]


def _check_requests(requests: list[dict[str, Any]], items: int, malformed: Callable[[dict[str, Any]], str]) -> None:
    by_item: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for body in requests:
        by_item[_item(body)].append(body)
    assert (len(requests), len(by_item)) == (2 * items, items), [len(b) for b in by_item.values()]
    for first, *rest in by_item.values():
        assert len(rest) == 1, "an item asked other than twice"
        [second] = rest
        assert {k: v for k, v in second.items() if k != "messages"} == {
            k: v for k, v in first.items() if k != "messages"
        }  # model, temperature, max_tokens, ... unchanged
        assert second["messages"][:-1] == first["messages"] and len(second["messages"]) == len(first["messages"]) + 1
        repair = second["messages"][-1]
        assert repair["role"] == "user" and repair["content"].startswith(REPAIR_OPENING)
        quoted = _redacted(malformed(first))
        assert all(f"> {line}" in repair["content"] for line in quoted.splitlines())  # quoted, without the key
    assert SECRET not in json.dumps(requests)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_command_succeeds_on_its_first_reask(case: Case, native_mini, tmp_path, monkeypatch, capsys, request):
    """Each case names the bug it catches in ``Case.catches``; each fails, among others, if a command sends a
    re-ask unchanged (the server then answers malformed again: 3 requests, a failure), if it does not re-ask at
    all (1 request, exit 1), or if the key leaks into a file, a request body or the output."""
    work = tmp_path / "work-case"
    work.mkdir()
    monkeypatch.chdir(work)  # nothing lands in the working directory's results/
    if case.name == "synthesize":
        shutil.copytree(request.getfixturevalue("clustered"), work, dirs_exist_ok=True)
    with ScriptedChatServer(MalformedThenGoodIfChanged(case.good, case.malformed), show_repairs=True) as server:
        code = main(case.args(work, server.base_url, native_mini))
        requests = list(server.requests)
    printed = capsys.readouterr()
    assert code == 0, printed.err[-3000:]
    assert not [line for line in printed.err.splitlines() if line.startswith("error:")], printed.err[-3000:]
    assert "Traceback" not in printed.err
    _check_requests(requests, case.items, case.malformed)
    case.check_outputs(work)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in printed.out and SECRET not in printed.err
