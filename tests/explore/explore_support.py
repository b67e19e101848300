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


def queries(page: dict) -> list[list[dict]]:
    """Per turn and system {"cut_before", "kept", "cut_after"}: a page stores each query as the first "base"
    characters of the same system's previous query plus "add", its first and last "cut" characters struck out."""
    previous: dict[int, str] = {}
    out = []
    for turn in page["turns"]:
        row = []
        for n, system in enumerate(turn["systems"]):
            whole = previous.get(n, "")[: system["query"]["base"]] + system["query"]["add"]
            before, after = system["query"].get("cut", [0, 0])
            end = len(whole) - after
            row.append({"cut_before": whole[:before], "kept": whole[before:end], "cut_after": whole[end:]})
            previous[n] = whole
        out.append(row)
    return out
