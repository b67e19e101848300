"""Scripted parties of the simulate tests: a user that asks its need's questions in order and then says it is
done, and a system under test that retrieves by keyword."""

from __future__ import annotations

import re
from typing import Any

from llm_server import Reply

KEYWORDS = {  # a word of the utterance -> the passages the test system ranks for it
    "deep": ["lake-depth", "lake-age"],
    "fish": ["lake-fish", "lake-depth"],
    "designed": ["bridge-design", "bridge-toll"],
    "open": ["bridge-open", "bridge-design"],
}


def need_questions(body: dict[str, Any]) -> list[str]:
    system = body["messages"][0]["content"]
    block = system.split("in the order you would ask about it:\n", 1)[1].split("\nAsk about", 1)[0]
    return [line[2:] for line in block.splitlines()]


def exchanges(body: dict[str, Any]) -> int:
    return len(re.findall(r"^You: ", body["messages"][-1]["content"], flags=re.M))


def user_in_order(body: dict[str, Any], done: bool = True) -> Reply:
    """The next question of the need, then [DONE] (``done=False``: never satisfied, it repeats the last one)."""
    questions, n = need_questions(body), exchanges(body)
    if n < len(questions):
        return Reply(questions[n])
    return Reply("Thank you. [DONE]") if done else Reply(f"Again: {questions[-1]}")


def ranked(utterance: str) -> list[str]:
    return next((docs for word, docs in KEYWORDS.items() if word in utterance.lower()), [])


def system_by_keyword(body: dict[str, Any]) -> tuple[int, Any]:
    docs = ranked(body["utterance"])
    passages = [{"id": d, "score": float(len(docs) - i)} for i, d in enumerate(docs)]
    return 200, {"response": f"answer to: {body['utterance']}", "passages": passages}
