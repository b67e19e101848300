"""Prompts for query expansion (``--history query2doc | hyde | mugi``): the model reads the conversation and
writes passages that would answer the current question; serialize/expansion.py makes the query from them.
Worded for mtrbench after the papers' one-line instructions; each template's hash is recorded with its texts."""

from __future__ import annotations

import re
from collections.abc import Sequence

from mtrbench.data.model import Message
from mtrbench.generation.prompts import dialogue
from mtrbench.serialize.expansion import HYDE, MUGI, PASSAGE_SEPARATOR, QUERY2DOC

MUGI_PASSAGES = 3

QUERY2DOC_SYSTEM = (
    "You help a search engine. Given a conversation, write one passage of about 100 words that answers the "
    "user's current question, the way a page of an encyclopedia or a good web page would. Read the earlier turns "
    "to know what the question refers to. Write facts, not a reply to the user; no preamble.\n"
    "Reply in the form: Passage: <the passage>"
)
HYDE_SYSTEM = (
    "Imagine the document a search engine should return for the user's current question in this conversation, "
    "and write it: one passage of about 100 words that contains the answer. Use the earlier turns to resolve "
    "what the question refers to. Invent plausible details where you are unsure; write no preamble.\n"
    "Reply in the form: Passage: <the passage>"
)
MUGI_SYSTEM = (
    f"You help a search engine. Given a conversation, write {MUGI_PASSAGES} different passages, each of about "
    "80 words, that answer the user's current question from different angles or with different facts, as "
    "encyclopedia or web pages would. Read the earlier turns to know what the question refers to. No preamble.\n"
    "Reply in the form:\n" + "\n".join(f"Passage {n}: <passage {n}>" for n in range(1, MUGI_PASSAGES + 1))
)
EXPANSION_SYSTEMS = {QUERY2DOC: QUERY2DOC_SYSTEM, HYDE: HYDE_SYSTEM, MUGI: MUGI_SYSTEM}
EXPANSION_FORMATS = {
    QUERY2DOC: "Passage: <the passage>",
    HYDE: "Passage: <the passage>",
    MUGI: "; ".join(f"Passage {n}: <passage {n}>" for n in range(1, MUGI_PASSAGES + 1)) + " (each on its own line)",
}
MAX_TOKENS = {QUERY2DOC: 300, HYDE: 300, MUGI: 700}

_ONE = re.compile(r"^\W*passage\W*:\s*(.+)", re.IGNORECASE | re.MULTILINE | re.S)
_NUMBERED = re.compile(
    r"^\W*passage\s*([0-9]+)\s*:\s*(.*?)(?=^\W*passage\s*[0-9]+\s*:|\Z)", re.IGNORECASE | re.M | re.S
)


def expansion_messages(kind: str, history: Sequence[Message], question: str) -> list[dict[str, str]]:
    before = dialogue(history) if history else "(none: this is the first question)"
    user = f"Conversation history:\n{before}\n\nCurrent question: {question}"
    return [{"role": "system", "content": EXPANSION_SYSTEMS[kind]}, {"role": "user", "content": user}]


def parse_expansion(kind: str, reply: str) -> str:
    """The passage (MuGI: the passages, one a line) in a reply; ValueError for one that holds none (re-asked)."""
    text = (reply or "").strip()
    if kind == MUGI:
        passages = [" ".join(body.split()) for _, body in _NUMBERED.findall(text)]
        passages = [p for p in passages if p]
        if not passages:
            raise ValueError("no 'Passage N:' line")
        return PASSAGE_SEPARATOR.join(passages)
    match = _ONE.search(text)
    passage = " ".join((match.group(1) if match else text).split())
    if not passage:
        raise ValueError("empty passage")
    return passage
