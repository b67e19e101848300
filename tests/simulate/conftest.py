"""A small native task for the simulate tests: two conversations (needs) over six passages."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # contract_server

DOCS = {
    "lake-depth": ("Lake Varnholm", "Lake Varnholm is 212 metres deep at its deepest point."),
    "lake-fish": ("Lake Varnholm", "Arctic char and brown trout live in Lake Varnholm."),
    "lake-age": ("Lake Varnholm", "The lake formed about 14,000 years ago behind a moraine."),
    "bridge-design": ("Orrin Bridge", "Hedda Lorne designed the Orrin Suspension Bridge."),
    "bridge-open": ("Orrin Bridge", "The Orrin Suspension Bridge opened in 1931."),
    "bridge-toll": ("Orrin Bridge", "Cars pay a toll of 6 crowns to cross the Orrin Bridge."),
}
CONVERSATIONS = [
    {
        "conversation_id": "lake",
        "messages": [
            {"role": "user", "content": "How deep is Lake Varnholm?", "rewrite": "How deep is Lake Varnholm?",
             "qrels": [{"doc_id": "lake-depth", "score": 2}]},
            {"role": "assistant", "content": "212 metres."},
            {"role": "user", "content": "which fish live there?", "rewrite": "Which fish live in Lake Varnholm?",
             "qrels": [{"doc_id": "lake-fish", "score": 1}]},
            {"role": "assistant", "content": "Char and trout."},
        ],
    },
    {
        "conversation_id": "bridge",
        "messages": [
            {"role": "user", "content": "Who designed the Orrin Bridge?", "rewrite": "Who designed the Orrin Bridge?",
             "qrels": [{"doc_id": "bridge-design", "score": 2}]},
            {"role": "assistant", "content": "Hedda Lorne."},
            {"role": "user", "content": "when did it open?", "rewrite": "When did the Orrin Bridge open?",
             "qrels": [{"doc_id": "bridge-open", "score": 2}]},
            {"role": "assistant", "content": "In 1931."},
        ],
    },
]  # fmt: skip


def write_task(folder: Path, conversations: list[dict]) -> Path:
    (folder / "conversations").mkdir(parents=True, exist_ok=True)
    rows = [{"_id": d, "title": t, "text": x} for d, (t, x) in DOCS.items()]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "conversations" / "test.jsonl").write_text("".join(json.dumps(c) + "\n" for c in conversations))
    return folder


@pytest.fixture(scope="session")
def two_needs(tmp_path_factory) -> Path:
    return write_task(tmp_path_factory.mktemp("two-needs"), CONVERSATIONS)
