"""Constants and helpers shared by the explorer tests and their fixtures."""

from __future__ import annotations

import json
import re
from pathlib import Path

from llm_server import Reply

ROOT = Path(__file__).resolve().parents[2]
INJECTED_DOC = "geo-varnholm-wildlife"
INJECTION = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
LIMIT = "2"  # conversations of the small site
MAX_LENGTH = "48"  # tokens: most of the tiny model's `full` queries are truncated
KEY_ENV = "MTRBENCH_EXPLORE_TEST_KEY"


def embedded(page: Path) -> dict:
    """The JSON a page embeds (what its script draws)."""
    html = page.read_text(encoding="utf-8")
    return json.loads(re.search(r'<script type="application/json" id="explore-data">(.*?)</script>', html, re.S)[1])


class Rag:
    """Generator and judge in one scripted server: each answer cites [1] and [2]; the verdict alternates by the
    question's length, so the test knows it in advance."""

    def __call__(self, body: dict) -> Reply:
        content = body["messages"][-1]["content"]
        judged = re.search(r"\[Current question\]\n(.*?)\n\[End of current question\]", content, re.S)
        if judged:
            return Reply(f"Verdict: [[{'CORRECT' if verdict(judged.group(1)) else 'INCORRECT'}]]")
        question = re.search(r"\nCurrent question: (.*)$", content).group(1)
        return Reply(f"On <b>{question}</b>: see [1] and also [2].")


def verdict(question: str) -> bool:
    return len(question) % 2 == 0
