"""Bad input through the real CLI: every case either fails with one `error:` line naming the file and the
line or record (exit 2, no traceback, nothing from a library's logger before it), or succeeds with the
right numbers and a named warning count.

The corpus of cases is generated in tmp from three clean inputs: a native mtrbench folder and a BEIR folder
(evaluated with `--model bm25`), and a TREC run with its qrels (`mtrbench score`).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mtrbench.cli import main

CORPUS = [
    {"_id": "varn-depth", "title": "Lake Varnholm", "text": "Lake Varnholm reaches a maximum depth of 212 metres."},
    {"_id": "varn-fish", "title": "Lake Varnholm", "text": "The Varnholm char is a fish living only in the lake."},
    {"_id": "orrin-design", "title": "Orrin Suspension Bridge", "text": "Hedda Lorne designed the Orrin bridge."},
    {"_id": "orrin-open", "title": "Orrin Suspension Bridge", "text": "The Orrin bridge opened to traffic in 1931."},
    {"_id": "kest-born", "title": "Ilse Kest", "text": "Ilse Kest, composer, was born in Tarnby in 1874."},
    {"_id": "kest-opera", "title": "Ilse Kest", "text": "Kest wrote one opera, The Salt Harbour, in 1911."},
]


def _user(content: str, *judged: tuple[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": content, "qrels": [{"doc_id": d, "score": g} for d, g in judged]}


def _assistant(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


CONVERSATIONS = [
    {
        "conversation_id": "c1",
        "switch_turn": 2,
        "messages": [
            _user("How deep is Lake Varnholm?", ("varn-depth", 2)),
            _assistant("212 metres."),
            _user("any fish in it?", ("varn-fish", 2)),
            _assistant("The Varnholm char."),
            _user("Who designed the Orrin Suspension Bridge?", ("orrin-design", 2)),
            _assistant("Hedda Lorne."),
            _user("when did it open?", ("orrin-open", 2), ("orrin-design", 1)),
            _assistant("In 1931."),
        ],
    },
    {
        "conversation_id": "c2",
        "switch_turn": -1,
        "messages": [
            _user("Where was the composer Ilse Kest born?", ("kest-born", 2)),
            _assistant("In Tarnby."),
            _user("did she write an opera?", ("kest-opera", 2)),
            _assistant("The Salt Harbour."),
            _user("thanks!"),
            _assistant("You're welcome."),
        ],
    },
]

QUERIES = [
    {"_id": "q1", "text": "How deep is Lake Varnholm?"},
    {
        "_id": "q2",
        "text": [
            {"role": "user", "content": "Who designed the Orrin bridge?"},
            {"role": "assistant", "content": "Hedda Lorne."},
            {"role": "user", "content": "when did it open?"},
        ],
    },
    {"_id": "q3", "text": "Where was Ilse Kest born?"},
    {"_id": "q4", "text": ["Who was Ilse Kest?", "which opera did she write?"]},
]
BEIR_QRELS = (
    "query-id\tcorpus-id\tscore\nq1\tvarn-depth\t1\nq2\torrin-open\t2\nq2\torrin-design\t1\n"
    "q3\tkest-born\t1\nq4\tkest-opera\t1\n"
)

RUN = "".join(
    f"{q} Q0 {d} {r} {s} t\n"
    for q, d, r, s in [
        ("q1", "varn-fish", 1, 3.0),
        ("q1", "varn-depth", 2, 2.5),
        ("q1", "orrin-open", 3, 1.0),
        ("q2", "orrin-open", 1, 1.5),
        ("q2", "kest-born", 2, 1.25),
        ("q3", "varn-depth", 1, 2.0),
        ("q3", "kest-born", 2, 1.0),
    ]
)
QRELS = "q1 0 varn-depth 1\nq1 0 varn-fish 0\nq2 0 orrin-open 2\nq3 0 kest-born 1\n"


def _jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def make_native(root: Path) -> Path:
    (root / "conversations").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(_jsonl(CORPUS))
    (root / "conversations" / "test.jsonl").write_text(_jsonl(CONVERSATIONS))
    return root


def make_beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(_jsonl(CORPUS))
    (root / "queries.jsonl").write_text(_jsonl(QUERIES))
    (root / "qrels" / "test.tsv").write_text(BEIR_QRELS)
    return root


def make_trec(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "a.run").write_text(RUN)
    (root / "a.qrels").write_text(QRELS)
    return root


# ----- edits: each takes the folder and changes one file in it


def records(name: str, edit: Callable[[list[dict[str, Any]]], object]) -> Callable[[Path], None]:
    """Rewrite a JSON-lines file's records after ``edit`` changed them in place."""

    def apply(root: Path) -> None:
        path = root / name
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        edit(rows)
        path.write_text(_jsonl(rows))

    return apply


def text(name: str, edit: Callable[[str], str]) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        path = root / name
        path.write_text(edit(path.read_text()))

    return apply


def raw(name: str, edit: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        path = root / name
        path.write_bytes(edit(path.read_bytes()))

    return apply


def both(*edits: Callable[[Path], None]) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        for edit in edits:
            edit(root)

    return apply


def line_edit(number: int, new: str) -> Callable[[str], str]:
    """Replace line ``number`` (from 1)."""

    def edit(content: str) -> str:
        lines = content.splitlines(keepends=True)
        lines[number - 1] = new
        return "".join(lines)

    return edit


def insert_line(number: int, new: str) -> Callable[[str], str]:
    def edit(content: str) -> str:
        lines = content.splitlines(keepends=True)
        lines.insert(number - 1, new)
        return "".join(lines)

    return edit


LATIN1 = lambda data: data.replace(b"Kest", b"K\xe9st", 1)  # noqa: E731  one undecodable byte
BOM = lambda data: b"\xef\xbb\xbf" + data  # noqa: E731
CRLF = lambda data: data.replace(b"\n", b"\r\n")  # noqa: E731
EMPTY = lambda data: b""  # noqa: E731
BLANK = lambda data: b"\n \n\n"  # noqa: E731


def set_judgment(conv: int, message: int, **fields: Any) -> Callable[[list[dict[str, Any]]], None]:
    def edit(rows: list[dict[str, Any]]) -> None:
        rows[conv]["messages"][message]["qrels"][0].update(fields)

    return edit


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # "native", "beir" (eval --model bm25) or "score"
    edit: Callable[[Path], None]
    error: str | None = None  # regex the one stderr line must match after "error: " (file and line/record)
    warning: tuple[str, int] | None = None  # a count in the result JSON (eval: mtrbench.warnings; score: queries)
    same_scores: bool = False  # the numbers equal the clean input's


def ok(
    name: str,
    kind: str,
    edit: Callable[[Path], None],
    warning: tuple[str, int] | None = None,
    same_scores: bool = False,
) -> Case:
    return Case(name, kind, edit, warning=warning, same_scores=same_scores)


def bad(name: str, kind: str, edit: Callable[[Path], None], error: str) -> Case:
    return Case(name, kind, edit, error=error)


C, V = "corpus.jsonl", "conversations/test.jsonl"
Q, R = "queries.jsonl", "qrels/test.tsv"

NATIVE = [
    ok("native: no README configs header", "native", lambda root: None, same_scores=True),
    ok("native: corpus with BOM", "native", raw(C, BOM), same_scores=True),
    ok("native: conversations with BOM", "native", raw(V, BOM), same_scores=True),
    ok("native: CRLF line ends", "native", both(raw(C, CRLF), raw(V, CRLF)), same_scores=True),
    ok("native: gzip-compressed files", "native", both(raw(C, gzip.compress), raw(V, gzip.compress)), same_scores=True),
    ok("native: blank lines between records", "native", text(C, lambda s: s.replace("\n", "\n\n")), same_scores=True),
    ok(
        "native: conversation ending on a user turn",
        "native",
        records(V, lambda rows: rows[1]["messages"].pop()),
        same_scores=True,
    ),
    ok(
        "native: qrels naming an unknown document",
        "native",
        records(V, lambda rows: rows[0]["messages"][0]["qrels"].append({"doc_id": "nowhere", "score": 1})),
        warning=("qrels naming unknown documents (dropped)", 1),
        same_scores=True,
    ),
    ok("native: grade 2.0 written as a float", "native", records(V, set_judgment(0, 0, score=2.0)), same_scores=True),
    ok("native: grade as a string", "native", records(V, set_judgment(0, 0, score="2")), same_scores=True),
    ok(
        "native: huge document",
        "native",
        records(C, lambda rows: rows.append({"_id": "huge", "title": "", "text": "filler words " * 400_000})),
    ),
    bad(
        "native: broken JSON line in the corpus",
        "native",
        text(C, line_edit(3, '{"_id": "orrin-design", "text": \n')),
        r"corpus\.jsonl:3: not valid JSON",
    ),
    bad(
        "native: broken JSON line in the conversations",
        "native",
        text(V, line_edit(2, "{not json}\n")),
        r"conversations/test\.jsonl:2: not valid JSON",
    ),
    bad("native: non-UTF-8 corpus", "native", raw(C, LATIN1), r"corpus\.jsonl: not UTF-8 text at line 5"),
    bad("native: non-UTF-8 conversations", "native", raw(V, LATIN1), r"test\.jsonl: not UTF-8 text at line 2"),
    bad("native: 0-byte corpus", "native", raw(C, EMPTY), r"corpus file .*corpus\.jsonl is empty"),
    bad("native: blank corpus", "native", raw(C, BLANK), r"corpus file .*corpus\.jsonl is empty"),
    bad("native: 0-byte conversations", "native", raw(V, EMPTY), r"conversations \(test\) file .*test\.jsonl is empty"),
    bad(
        "native: a corpus line that is not an object",
        "native",
        text(C, insert_line(2, "[1, 2]\n")),
        r"corpus\.jsonl:2: a record must be a JSON object",
    ),
    bad(
        "native: corpus record without _id",
        "native",
        records(C, lambda rows: rows[2].pop("_id")),
        r"corpus\.jsonl record 2: no '_id'",
    ),
    bad(
        "native: corpus record without text",
        "native",
        records(C, lambda rows: rows[1].pop("text")),
        r"corpus\.jsonl record 1 \(varn-fish\): no 'text'",
    ),
    bad(
        "native: duplicate document id",
        "native",
        records(C, lambda rows: rows[4].update(_id="varn-fish")),
        r"corpus\.jsonl record 4: 1 duplicate document id\(s\), e\.g\. 'varn-fish' \(also record 1\)",
    ),
    bad(
        "native: document id with a space",
        "native",
        records(C, lambda rows: rows[3].update(_id="orrin open")),
        r"corpus\.jsonl record 3: document id 'orrin open' contains white space",
    ),
    bad(
        "native: document id with a tab",
        "native",
        records(C, lambda rows: rows[3].update(_id="orrin\topen")),
        r"corpus\.jsonl record 3: document id 'orrin\topen' contains white space",
    ),
    bad(
        "native: empty document id",
        "native",
        records(C, lambda rows: rows[5].update(_id="")),
        r"corpus\.jsonl record 5: document id '' is empty",
    ),
    bad(
        "native: conversation id with a space",
        "native",
        records(V, lambda rows: rows[1].update(conversation_id="c 2")),
        r"test\.jsonl record 1: conversation_id 'c 2' contains white space",
    ),
    bad(
        "native: conversation without conversation_id",
        "native",
        records(V, lambda rows: rows[1].pop("conversation_id")),
        r"test\.jsonl record 1: needs 'conversation_id'",
    ),
    bad(
        "native: qrels doc_id with a space",
        "native",
        records(V, set_judgment(1, 2, doc_id="kest opera")),
        r"test\.jsonl record 1 \(c2\): message 2 qrels\[0\] doc_id 'kest opera' contains white space",
    ),
    bad(
        "native: grade inf",
        "native",
        records(V, set_judgment(0, 2, score="inf")),
        r"test\.jsonl record 0 \(c1\): message 2 qrels\[0\] needs doc_id and integer score",
    ),
    bad(
        "native: grade Infinity (a JSON extension)",
        "native",
        text(V, lambda s: s.replace('"score": 2}', '"score": Infinity}', 1)),
        r"test\.jsonl record 0 \(c1\): message 0 qrels\[0\] needs doc_id and integer score",
    ),
    bad(
        "native: grade NaN (a JSON extension)",
        "native",
        text(V, lambda s: s.replace('"score": 1}', '"score": NaN}', 1)),
        r"test\.jsonl record 0 \(c1\): message 6 qrels\[1\] needs doc_id and integer score",
    ),
    bad(
        "native: grade 1.5",
        "native",
        records(V, set_judgment(0, 2, score=1.5)),
        r"test\.jsonl record 0 \(c1\): message 2 qrels\[0\] needs doc_id and integer score",
    ),
    bad(
        "native: grade as text",
        "native",
        records(V, set_judgment(1, 0, score="high")),
        r"test\.jsonl record 1 \(c2\): message 0 qrels\[0\] needs doc_id and integer score",
    ),
    bad(
        "native: grade true",
        "native",
        records(V, set_judgment(1, 0, score=True)),
        r"test\.jsonl record 1 \(c2\): message 0 qrels\[0\] needs doc_id and integer score",
    ),
    bad(
        "native: unjudged conversation with an unknown role",
        "native",
        records(
            V, lambda rows: rows.append({"conversation_id": "c3", "messages": [{"role": "narrator", "content": "x"}]})
        ),
        r"test\.jsonl record 2 \(c3\): message 0 needs role user/assistant",
    ),
    bad(
        "native: unjudged conversation with only assistant turns",
        "native",
        records(V, lambda rows: rows.append({"conversation_id": "c3", "messages": [_assistant("hello")]})),
        r"test\.jsonl record 2 \(c3\): conversation has no user message",
    ),
    bad(
        "native: empty question in an unjudged turn",
        "native",
        records(V, lambda rows: rows[1]["messages"][4].update(content="  ")),
        r"test\.jsonl: query 'c2_3' \(conversation c2, turn 3\) has an empty current question",
    ),
    bad(
        "native: assistant message without content",
        "native",
        records(V, lambda rows: rows[0]["messages"][3].pop("content")),
        r"test\.jsonl record 0 \(c1\): message 3 needs role user/assistant and string content",
    ),
]

BEIR_CASES = [
    ok("beir: clean", "beir", lambda root: None, same_scores=True),
    ok("beir: CRLF line ends", "beir", both(raw(C, CRLF), raw(Q, CRLF), raw(R, CRLF)), same_scores=True),
    ok("beir: BOM on every file", "beir", both(raw(C, BOM), raw(Q, BOM), raw(R, BOM)), same_scores=True),
    ok("beir: gzip-compressed corpus", "beir", raw(C, gzip.compress), same_scores=True),
    ok(
        "beir: qrels for an unknown query",
        "beir",
        text(R, lambda s: s + "q9\tkest-born\t1\n"),
        warning=("qrels for unknown queries (dropped)", 1),
        same_scores=True,
    ),
    ok(
        "beir: query without qrels",
        "beir",
        records(Q, lambda rows: rows.append({"_id": "q5", "text": "anything?"})),
        warning=("queries without qrels in this split (skipped)", 1),
        same_scores=True,
    ),
    ok(
        "beir: malformed query without qrels",
        "beir",
        records(
            Q,
            lambda rows: rows.append(
                {"_id": "q5", "text": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
            ),
        ),
        warning=("malformed queries without qrels (skipped)", 1),
        same_scores=True,
    ),
    ok(
        "beir: qrels naming an unknown document",
        "beir",
        text(R, lambda s: s + "q3\tnowhere\t1\n"),
        warning=("qrels naming unknown documents (dropped)", 1),
        same_scores=True,
    ),
    bad(
        "beir: judged query ending on an assistant turn",
        "beir",
        records(Q, lambda rows: rows[1]["text"].pop()),
        r"queries\.jsonl record 1 \(q2\): a conversational query must end with the user's question",
    ),
    bad(
        "beir: broken JSON line in the queries",
        "beir",
        text(Q, line_edit(4, '{"_id": "q4", "text": [\n')),
        r"queries\.jsonl:4: not valid JSON",
    ),
    bad("beir: non-UTF-8 queries", "beir", raw(Q, LATIN1), r"queries\.jsonl: not UTF-8 text at line 3"),
    bad(
        "beir: non-UTF-8 qrels",
        "beir",
        raw(R, lambda d: d + b"q3\tk\xe9st\t1\n"),
        r"test\.tsv: not UTF-8 text at line 7",
    ),
    bad("beir: 0-byte queries", "beir", raw(Q, EMPTY), r"queries file .*queries\.jsonl is empty"),
    bad("beir: 0-byte corpus", "beir", raw(C, EMPTY), r"corpus file .*corpus\.jsonl is empty"),
    bad("beir: 0-byte qrels", "beir", raw(R, EMPTY), r"qrels file .*test\.tsv is empty"),
    bad(
        "beir: qrels header only",
        "beir",
        text(R, lambda s: s.splitlines(keepends=True)[0]),
        r"queries\.jsonl: no query has qrels in split 'test'",
    ),
    bad(
        "beir: qrels grade inf",
        "beir",
        text(R, line_edit(3, "q2\torrin-open\tinf\n")),
        r"test\.tsv record 2 \(q2\): score 'inf' is not an integer",
    ),
    bad(
        "beir: qrels grade 1.5",
        "beir",
        text(R, line_edit(3, "q2\torrin-open\t1.5\n")),
        r"test\.tsv record 2 \(q2\): score '1\.5' is not an integer",
    ),
    bad(
        "beir: qrels grade as text",
        "beir",
        text(R, line_edit(5, "q4\tkest-opera\thigh\n")),
        r"test\.tsv record 4 \(q4\): score 'high' is not an integer",
    ),
    bad(
        "beir: qrels with 4 fields",
        "beir",
        text(R, line_edit(2, "q1\t0\tvarn-depth\t1\n")),
        r"test\.tsv record 1: a qrels line needs 'query-id<TAB>corpus-id<TAB>score', got 4 fields",
    ),
    bad(
        "beir: qrels doc id with a space",
        "beir",
        text(R, line_edit(2, "q1\tvarn depth\t1\n")),
        r"test\.tsv record 1: corpus-id 'varn depth' contains white space",
    ),
    bad(
        "beir: query id with a space",
        "beir",
        both(records(Q, lambda rows: rows[0].update(_id="q 1")), text(R, line_edit(2, "q 1\tvarn-depth\t1\n"))),
        r"test\.tsv record 1: query-id 'q 1' contains white space",
    ),
    bad(
        "beir: query without text",
        "beir",
        records(Q, lambda rows: rows[2].pop("text")),
        r"queries\.jsonl: record 2 needs '_id' and 'text'",
    ),
    bad(
        "beir: duplicate document id",
        "beir",
        records(C, lambda rows: rows.append(dict(rows[0]))),
        r"corpus\.jsonl record 6: 1 duplicate document id\(s\), e\.g\. 'varn-depth' \(also record 0\)",
    ),
]

SCORE = [
    ok("score: clean", "score", lambda root: None, same_scores=True),
    ok("score: run with BOM", "score", raw("a.run", BOM), same_scores=True),
    ok("score: CRLF line ends", "score", both(raw("a.run", CRLF), raw("a.qrels", CRLF)), same_scores=True),
    ok(
        "score: gzip-compressed run and qrels",
        "score",
        both(raw("a.run", gzip.compress), raw("a.qrels", gzip.compress)),
        same_scores=True,
    ),
    ok(
        "score: BEIR tsv qrels",
        "score",
        text(
            "a.qrels",
            lambda s: (
                "query-id\tcorpus-id\tscore\n"
                + "".join("\t".join(line.split()[::2][:1] + line.split()[2:]) + "\n" for line in s.splitlines())
            ),
        ),
        same_scores=True,
    ),
    ok(
        "score: judged query absent from the run",
        "score",
        text("a.qrels", lambda s: s + "q7 0 kest-opera 1\n"),
        warning=("judged_without_run", 1),
    ),
    ok(
        "score: run queries without qrels",
        "score",
        text("a.run", lambda s: s + "q8 Q0 varn-fish 1 1.0 t\n"),
        warning=("run_queries_without_qrels", 1),
        same_scores=True,
    ),
    ok(
        "score: grade 1.0 written as a float",
        "score",
        text("a.qrels", line_edit(4, "q3 0 kest-born 1.0\n")),
        same_scores=True,
    ),
    ok(
        "score: negative grade (not relevant)",
        "score",
        text("a.qrels", lambda s: s + "q1 0 orrin-open -1\n"),
        same_scores=True,
    ),
    bad(
        "score: NaN score",
        "score",
        text("a.run", line_edit(2, "q1 Q0 varn-depth 2 nan t\n")),
        r"a\.run:2: score 'nan' is not a finite number",
    ),
    bad(
        "score: inf score",
        "score",
        text("a.run", line_edit(4, "q2 Q0 orrin-open 1 inf t\n")),
        r"a\.run:4: score 'inf' is not a finite number",
    ),
    bad(
        "score: -inf score",
        "score",
        text("a.run", line_edit(4, "q2 Q0 orrin-open 1 -Infinity t\n")),
        r"a\.run:4: score '-Infinity' is not a finite number",
    ),
    bad(
        "score: text score",
        "score",
        text("a.run", line_edit(1, "q1 Q0 varn-fish 1 high t\n")),
        r"a\.run:1: score 'high' is not a number",
    ),
    bad("score: 0-byte run", "score", raw("a.run", EMPTY), r"run file .*a\.run is empty"),
    bad("score: blank run", "score", raw("a.run", BLANK), r"run file .*a\.run is empty"),
    bad("score: 0-byte qrels", "score", raw("a.qrels", EMPTY), r"qrels file .*a\.qrels is empty"),
    bad(
        "score: run line with 5 fields",
        "score",
        text("a.run", line_edit(3, "q1 Q0 orrin-open 3 1.0\n")),
        r"a\.run:3: a run line needs 6 fields 'qid Q0 docid rank score tag', got 5",
    ),
    bad(
        "score: run line with 7 fields (a document id with a space)",
        "score",
        text("a.run", line_edit(3, "q1 Q0 orrin open 3 1.0 t\n")),
        r"a\.run:3: a run line needs 6 fields 'qid Q0 docid rank score tag', got 7",
    ),
    bad(
        "score: document twice for a query",
        "score",
        text("a.run", lambda s: s + "q1 Q0 varn-fish 9 0.5 t\n"),
        r"a\.run:8: document 'varn-fish' appears twice for query 'q1'",
    ),
    bad(
        "score: non-UTF-8 run",
        "score",
        raw("a.run", lambda d: d.replace(b"kest-born", b"k\xe9st-born", 1)),
        r"a\.run: not UTF-8 text at line 5",
    ),
    bad(
        "score: non-UTF-8 qrels",
        "score",
        raw("a.qrels", lambda d: d.replace(b"kest-born", b"k\xe9st-born")),
        r"a\.qrels: not UTF-8 text at line 4",
    ),
    bad(
        "score: qrels grade inf",
        "score",
        text("a.qrels", line_edit(3, "q2 0 orrin-open inf\n")),
        r"a\.qrels:3 \(q2\): grade 'inf' is not an integer",
    ),
    bad(
        "score: qrels grade 1.5",
        "score",
        text("a.qrels", line_edit(3, "q2 0 orrin-open 1.5\n")),
        r"a\.qrels:3 \(q2\): grade '1\.5' is not an integer",
    ),
    bad(
        "score: qrels grade as text",
        "score",
        text("a.qrels", line_edit(1, "q1 0 varn-depth yes\n")),
        r"a\.qrels:1 \(q1\): grade 'yes' is not an integer",
    ),
    bad(
        "score: qrels line with 3 fields",
        "score",
        text("a.qrels", line_edit(2, "q1 varn-fish 0\n")),
        r"a\.qrels:2: a qrels line needs 'qid iter docid grade', got 3 fields",
    ),
    bad(
        "score: BEIR qrels doc id with a space",
        "score",
        text("a.qrels", lambda s: "query-id\tcorpus-id\tscore\nq1\tvarn depth\t1\n"),
        r"a\.qrels:2: corpus-id 'varn depth' contains white space",
    ),
    bad(
        "score: run of another task",
        "score",
        text("a.run", lambda s: s.replace("q", "x")),
        r"run .*a\.run has none of the 3 judged queries of .*a\.qrels",
    ),
]

CASES = NATIVE + BEIR_CASES + SCORE


def _argv(kind: str, root: Path, out: Path) -> list[str]:
    if kind == "score":
        return [
            "score",
            "--run",
            str(root / "a.run"),
            "--qrels",
            str(root / "a.qrels"),
            "--output",
            str(out / "s.json"),
        ]
    return ["eval", "--model", "bm25", "--task", str(root), "--history", "full", "--output-dir", str(out), "--quiet"]


def _result(kind: str, out: Path) -> tuple[dict[str, float], dict[str, int]]:
    """(scores, counts) of a finished run: eval's ``mtrbench.warnings``, score's ``queries``."""
    if kind == "score":
        document = json.loads((out / "s.json").read_text())
        return document["scores"], document["queries"]
    [path] = [p for p in out.rglob("*.json") if p.name != "model_meta.json"]
    document = json.loads(path.read_text())
    scores = {k: v for k, v in document["scores"]["test"][0].items() if isinstance(v, float)}
    return scores, document["mtrbench"]["warnings"]


_MAKE = {"native": make_native, "beir": make_beir, "score": make_trec}
_clean_scores: dict[str, dict[str, float]] = {}


def _run(kind: str, edit: Callable[[Path], None], tmp: Path, capfd: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    root = _MAKE[kind](tmp / "in")
    edit(root)
    out = tmp / "out"
    out.mkdir()
    code = main(_argv(kind, root, out))
    captured = capfd.readouterr()
    return code, captured.out, captured.err


def _clean(kind: str, tmp: Path, capfd: pytest.CaptureFixture[str]) -> dict[str, float]:
    if kind not in _clean_scores:
        code, _, err = _run(kind, lambda root: None, tmp / "clean", capfd)
        assert code == 0, err
        _clean_scores[kind] = _result(kind, tmp / "clean" / "out")[0]
    return _clean_scores[kind]


def test_the_corpus_of_cases_is_large_and_named_uniquely() -> None:
    assert len(CASES) >= 40
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input(case: Case, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    clean = _clean(case.kind, tmp_path, capfd) if case.same_scores else None
    code, out, err = _run(case.kind, case.edit, tmp_path / "case", capfd)
    assert "Traceback" not in out + err
    if case.error is not None:
        lines = err.splitlines()
        assert code == 2 and len(lines) == 1, err
        assert lines[0].startswith("error: ")
        assert re.search(case.error, lines[0]), lines[0]
        return
    assert code == 0, err
    scores, counts = _result(case.kind, tmp_path / "case" / "out")
    if case.warning is not None:
        key, count = case.warning
        assert counts.get(key) == count, counts
        shown = " ".join((out + err).split())  # rich wraps titles; eval's warnings go to stderr
        assert (
            f"{count} {key}"
            if case.kind != "score"
            else "judged queries absent"
            if key == "judged_without_run"
            else "run queries without qrels"
        ) in shown, out
    if clean is not None:
        assert scores == pytest.approx(clean, abs=1e-12)


def test_judged_query_absent_from_the_run_scores_zero(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The absent query is in the mean with 0, not dropped: adding it scales the clean mean by 3/4."""
    clean = _clean("score", tmp_path, capfd)
    code, out, _ = _run("score", text("a.qrels", lambda s: s + "q7 0 kest-opera 1\n"), tmp_path / "case", capfd)
    assert code == 0 and "1 judged queries absent from the run (scored 0)" in " ".join(out.split())
    scores, counts = _result("score", tmp_path / "case" / "out")
    assert counts["evaluated"] == 4
    assert scores["ndcg_at_10"] == pytest.approx(clean["ndcg_at_10"] * 3 / 4)


@pytest.mark.parametrize(
    "name", ["native: broken JSON line in the corpus", "native: non-UTF-8 corpus", "native: 0-byte conversations"]
)
def test_no_library_logging_before_the_error_line(name: str, tmp_path: Path) -> None:
    """Through a real process: datasets' logger ("Failed to load JSON ...") and progress bars stay silent."""
    case = next(c for c in CASES if c.name == name)
    root = make_native(tmp_path / "in")
    case.edit(root)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run(
        [sys.executable, "-m", "mtrbench.cli", *_argv("native", root, tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [proc.stderr.strip()] and proc.stderr.startswith("error: "), proc.stderr
    assert case.error is not None and re.search(case.error, proc.stderr)


def test_written_runs_read_back(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """What eval writes, score reads and scores the same (ids are checked at load so this always holds)."""
    root = make_native(tmp_path / "in")
    assert main(_argv("native", root, tmp_path / "out")) == 0
    [run] = list((tmp_path / "out").rglob("*.run.trec"))
    qrels = tmp_path / "q.trec"
    qrels.write_text(
        "".join(
            f"c{c + 1}_{t} 0 {j['doc_id']} {j['score']}\n"
            for c, conv in enumerate(CONVERSATIONS)
            for t, m in enumerate([m for m in conv["messages"] if m["role"] == "user"], 1)
            for j in m["qrels"]
        )
    )
    capfd.readouterr()
    assert main(["score", "--run", str(run), "--qrels", str(qrels), "--output", str(tmp_path / "s.json")]) == 0
    evaluated = _result("native", tmp_path / "out")[0]
    rescored = json.loads((tmp_path / "s.json").read_text())["scores"]
    assert rescored["ndcg_at_10"] == pytest.approx(evaluated["ndcg_at_10"])


# ----- outputs that cannot be written and other inputs of the newer commands (issue 26): one line, exit 2


def _fuse_to_unmakeable_output(tmp: Path) -> tuple[list[str], str]:
    root = make_trec(tmp / "in")
    run = str(root / "a.run")
    return ["fuse", run, run, "--method", "rrf", "-o", "/proc/x/y.trec"], r"cannot write /proc/x/y\.trec: "


def _export_to_an_existing_file(tmp: Path) -> tuple[list[str], str]:
    root = make_native(tmp / "in")
    out = tmp / "existing"
    out.write_text("not a folder\n")
    return (
        ["export", str(root), "--format", "beir", "--out", str(out), "--truncate", "none"],
        rf"{re.escape(str(out))}: {re.escape(str(out))} is a file, not a folder",
    )


def _judge_non_utf8_generations(tmp: Path) -> tuple[list[str], str]:
    root = make_native(tmp / "in")
    generations = tmp / "generations.jsonl"
    generations.write_bytes(b'{"qid": "c1_1", "answer": "212 metres."}\n{"qid": "c2_1", "answer": "In T\xe9rnby."}\n')
    return (
        ["judge", "run", str(generations), "--task", str(root), "--output-dir", str(tmp / "out")],
        r"generations\.jsonl: not UTF-8 text at line 2",
    )


def _card_with_a_python_tag(tmp: Path) -> tuple[list[str], str]:
    card = tmp / "evil.yaml"
    card.write_text('name: evil\nsource: !!python/object/apply:os.system ["echo owned"]\nsplits: [test]\n')
    return (
        ["eval", "--model", "bm25", "--task", str(card), "--output-dir", str(tmp / "out"), "--quiet"],
        r"evil\.yaml:2:9: not valid YAML \(could not determine a constructor .*python/object",
    )


def _a_file_named(tmp: Path, name: str) -> Path:
    blocker = tmp / name
    blocker.write_text("a file, not a folder\n")
    return blocker


def _eval_output_dir_is_a_file(tmp: Path) -> tuple[list[str], str]:
    root, blocker = make_native(tmp / "in"), _a_file_named(tmp, "results")
    return (
        ["eval", "--model", "bm25", "--task", str(root), "--output-dir", str(blocker), "--quiet"],
        rf"{re.escape(str(blocker))}.* is a file, not a folder",
    )


def _score_output_cannot_be_created(tmp: Path) -> tuple[list[str], str]:
    root = make_trec(tmp / "in")
    return (
        ["score", "--run", str(root / "a.run"), "--qrels", str(root / "a.qrels"), "--output", "/proc/x/s.json"],
        r"/proc/x/s\.json",
    )


def _compare_output_under_a_file(tmp: Path) -> tuple[list[str], str]:
    root, blocker = make_trec(tmp / "in"), _a_file_named(tmp, "tables")
    run, other = str(root / "a.run"), root / "b.run"
    other.write_text((root / "a.run").read_text().replace("varn-fish 1 3.0", "varn-fish 1 2.0", 1))
    return (
        [
            "compare",
            run,
            str(other),
            "--qrels",
            str(root / "a.qrels"),
            "--format",
            "latex",
            "--output",
            str(blocker / "t.tex"),
        ],
        rf"{re.escape(str(blocker))} is a file, not a folder",
    )


def _meta_output_under_a_file(tmp: Path) -> tuple[list[str], str]:
    root, blocker = make_trec(tmp / "in"), _a_file_named(tmp, "meta")
    other = root / "b.run"  # another system: q1's first two documents swapped
    other.write_text((root / "a.run").read_text().replace("varn-fish 1 3.0", "varn-fish 1 2.0", 1))
    return (
        [
            "meta",
            "power",
            "--runs",
            str(root / "a.run"),
            str(other),
            "--qrels",
            str(root / "a.qrels"),
            "--output",
            str(blocker / "power.json"),
        ],
        rf"{re.escape(str(blocker))} is a file, not a folder",
    )


def _judge_output_dir_is_a_file(tmp: Path) -> tuple[list[str], str]:
    root, blocker = make_native(tmp / "in"), _a_file_named(tmp, "judged")
    generations = tmp / "generations.jsonl"
    generations.write_text('{"qid": "c1_1", "answer": "212 metres."}\n')
    return (
        ["judge", "run", str(generations), "--task", str(root), "--output-dir", str(blocker)],
        rf"{re.escape(str(blocker))}.* is a file, not a folder",
    )


def _leaderboard_output_cannot_be_created(tmp: Path) -> tuple[list[str], str]:
    return (["leaderboard", "build", "reported", "-o", "/proc/x/board.json"], r"/proc/x/board\.json")


COMMAND_CASES = {
    "eval: --output-dir is a file": _eval_output_dir_is_a_file,
    "score: --output cannot be created": _score_output_cannot_be_created,
    "compare: --output under a file": _compare_output_under_a_file,
    "meta: --output under a file": _meta_output_under_a_file,
    "judge run: --output-dir is a file": _judge_output_dir_is_a_file,
    "leaderboard build: -o cannot be created": _leaderboard_output_cannot_be_created,
    "fuse: an output path that cannot be created": _fuse_to_unmakeable_output,
    "export: --out an existing file": _export_to_an_existing_file,
    "judge run: generations not UTF-8": _judge_non_utf8_generations,
    "task card: a !!python/object tag": _card_with_a_python_tag,
}


@pytest.mark.parametrize("name", list(COMMAND_CASES))
def test_bad_command_input(name: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    argv, error = COMMAND_CASES[name](tmp_path)
    capfd.readouterr()
    code = main(argv)
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith("error: ") and re.search(error, lines[0]), lines[0]
    assert not (tmp_path / "out").exists() and "owned" not in out


def test_a_full_disk_is_one_line_naming_the_result_file(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every result file goes through the atomic writer; a disk that fills up while it writes is one line naming
    the file eval was writing, and no partial file is left behind."""
    import errno

    from mtrbench.infra import atomic

    real_fdopen = atomic.os.fdopen

    class FullDisk:
        def __init__(self, fd, mode):
            self.handle = real_fdopen(fd, mode)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()
            return False

        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic.os, "fdopen", FullDisk)
    root = make_native(tmp_path / "in")
    capfd.readouterr()
    code = main(["eval", "--model", "bm25", "--task", str(root), "--output-dir", str(tmp_path / "out"), "--quiet"])
    out, err = capfd.readouterr()
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in out + err, err
    assert re.match(r"error: cannot write .*out/.*: No space left on device$", lines[0]), lines[0]
    assert not [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
