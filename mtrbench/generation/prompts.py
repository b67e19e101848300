"""Prompts for the model-backed history steps and for answer generation, after CORAL (Liu et al. 2024):
§4's conversation compression (rewrite, LLM summary), Table 8 (summary prompt) and Table 9 (answer with
citation labels). Worded for mtrbench; each template's hash is recorded with what it produced, so a
changed prompt never passes for the old one.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence

from mtrbench.data.model import USER, Message
from mtrbench.llm.replies import extract_line

REWRITE_SYSTEM = (
    "You turn the last question of a conversation into a stand-alone question: one that a search engine or "
    "a person who never saw the conversation would understand exactly as the user meant it. Replace pronouns "
    "and vague references with what they point to in the earlier turns and restore anything left implicit. "
    "Keep the question's meaning, intent and language; add nothing the user did not ask. If the question "
    "already stands on its own, give it back unchanged. Do not answer it.\n"
    "Reply with exactly one line: Rewrite: <the stand-alone question>"
)

SUMMARY_SYSTEM = (
    "You condense a conversation for an assistant who must answer the user's current question. Summarize the "
    "conversation history so that it keeps what helps to understand and answer the current question: the "
    "topics, names, facts and constraints that came up, especially those the question refers to. Leave out "
    "what does not matter for it. Do not answer the current question. Always write a summary; never ask for "
    "clarification or say you cannot.\n"
    "Reply in the form: Summary: <the summary>\n\n"
    "Example.\n"
    "Current question: And how long does it take to cross?\n"
    "Conversation history:\n"
    "User: Which is the longest bridge in Denmark?\n"
    "Assistant: The Great Belt Bridge, whose East Bridge spans 6.8 km between Zealand and Sprogø.\n"
    "User: Can you drive over it?\n"
    "Assistant: Yes, it carries a motorway and there is a toll for cars.\n"
    "Summary: The user asked about Denmark's longest bridge, the Great Belt Bridge (East Bridge 6.8 km, "
    "Zealand to Sprogø), and learned that cars can drive across it on a toll motorway; the current question "
    "asks how long crossing this bridge takes."
)

ANSWER_SYSTEM = (
    "You answer the user's current question in a conversation, using the numbered passages you are given as "
    "your sources. {history_rule}Support what you state with the numbers of the passages it comes from, in "
    "square brackets right after the statement, e.g. [1] or [2][3]; cite only passages that say it. If the "
    "passages do not hold the answer, answer from your own knowledge without a citation. Do not say that you "
    "cannot answer."
)

# by ``--history`` name (eval's); a rule's text, not its name, goes into the prompt hash
HISTORY_RULES = {
    "full": "The question may leave things out or refer back to earlier turns: read it in the light of the "
    "conversation history. ",
    "last-response": "The question may leave things out or refer back to earlier turns: read it in the light of "
    "the conversation history (the earlier questions and the last response). ",
    "rewrite": "",
    "rewrite:llm": "",
    "summary:llm": "The question may leave things out or refer back to earlier turns: read it in the light of the "
    "summary of the conversation so far. ",
}


def template_hash(*parts: str) -> str:
    return hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()[:12]


def dialogue(messages: Sequence[Message]) -> str:
    return "\n".join(f"{'User' if m.role == USER else 'Assistant'}: {m.content}" for m in messages)


def rewrite_messages(history: Sequence[Message], question: str) -> list[dict[str, str]]:
    user = f"Conversation history:\n{dialogue(history)}\n\nLast question: {question}"
    return [{"role": "system", "content": REWRITE_SYSTEM}, {"role": "user", "content": user}]


def summary_messages(history: Sequence[Message], question: str) -> list[dict[str, str]]:
    user = f"Current question: {question}\nConversation history:\n{dialogue(history)}"
    return [{"role": "system", "content": SUMMARY_SYSTEM}, {"role": "user", "content": user}]


MODEL_HISTORY_PROMPTS = {"rewrite": (REWRITE_SYSTEM, rewrite_messages), "summary": (SUMMARY_SYSTEM, summary_messages)}
_LABELS = {
    "rewrite": re.compile(
        r"^\W*(?:stand-alone question|standalone question|rewrite|rewritten question)\W*:"
        r"\s*(.+)$",
        re.IGNORECASE | re.MULTILINE,
    ),
    "summary": re.compile(r"^\W*(?:summary|summarization)\W*:\s*(.+)", re.IGNORECASE | re.MULTILINE | re.S),
}


_REWRITE_LABELS = r"stand-alone question|standalone question|rewrite|rewritten question"


def parse_model_history(kind: str, reply: str) -> str:
    """The rewrite or summary in a reply. Raises ValueError for a malformed one (retried by the client):
    an empty reply, or a rewrite spread over several lines with no ``Rewrite:`` label to say which is it.
    A rewrite is read as every one-line text is (``mtrbench.llm.replies.extract_line``)."""
    if kind == "rewrite":
        return extract_line(reply or " ", _REWRITE_LABELS, "rewrite")
    text = (reply or "").strip()
    matches = _LABELS[kind].findall(text)
    if matches:
        text = matches[-1].strip()
    elif kind == "rewrite" and "\n" in text:
        raise ValueError("several lines and no 'Rewrite:' line")
    text = " ".join(text.split()) if kind == "rewrite" else text.strip()
    if not text:
        raise ValueError(f"empty {kind}")
    return text


def passages_block(passages: Sequence[str]) -> str:
    return "\n\n".join(f"[{n}] {text}" for n, text in enumerate(passages, start=1))


def answer_messages(
    history_mode: str, question: str, passages: Sequence[str], history_text: str
) -> list[dict[str, str]]:
    """CORAL Table 9 in our words: instruction by ``--history`` name, then the history (or summary), the
    passages numbered [1]..[k] and the current question. ``history_text`` is empty for the rewrites."""
    system = ANSWER_SYSTEM.format(history_rule=HISTORY_RULES[history_mode])
    parts = []
    if history_text:
        title = "Summary of the conversation so far" if history_mode == "summary:llm" else "Conversation history"
        parts.append(f"{title}:\n{history_text}")
    parts.append(f"Passages:\n{passages_block(passages) if passages else '(none)'}")
    parts.append(f"Current question: {question}")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def answer_prompt_hash(history_mode: str) -> str:
    return template_hash(ANSWER_SYSTEM, HISTORY_RULES[history_mode], "history/passages/question v1")
