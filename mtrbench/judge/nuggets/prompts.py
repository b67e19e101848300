"""The prompts of nugget evaluation (in mtrbench's words, after the AutoNuggetizer's steps) and their reply readers.

* creation: the turn's nuggets so far and a batch of its relevant passages -> the revised list (at most N, most
  important first), a JSON array of strings;
* labelling: a batch of nuggets -> "vital" or "okay" for each;
* assignment: an answer and a batch of nuggets -> "support", "partial_support" or "not_support" for each;
* citation support (TREC RAG 2024's support evaluation): an answer sentence and one passage it cites ->
  "full_support", "partial_support" or "no_support".

A list reply must hold exactly one label per nugget asked, in order; anything else is malformed (and re-asked).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence

from mtrbench.judge.nuggets.labels import ASKED_ASSIGNMENTS, ASKED_IMPORTANCES, CITATION_SUPPORT
from mtrbench.llm.replies import ExtractionError, extract_json

Messages = list[dict[str, str]]

_ARRAY = re.compile(r"\[.*\]", re.S)
_CITATION_WORD = re.compile(r"\b(full_support|partial_support|no_support|full|partial|no|none)\b", re.I)

CREATE_SYSTEM = (
    "You write information nuggets: short, self-contained facts that a good answer to a search question "
    "should contain. You keep a running list and revise it as new passages arrive."
)
LABEL_SYSTEM = "You decide how essential each information nugget is to a good answer to a search question."
ASSIGN_SYSTEM = "You check which information nuggets a given answer conveys."
SUPPORT_SYSTEM = "You check whether a cited passage backs up a sentence of an answer."

NUGGET_LIST_FORMAT = 'a JSON array of strings, e.g. ["first nugget", "second nugget"]'


def _question_block(question: str, earlier: Sequence[str]) -> str:
    lines = [f"Question: {question}"]
    if earlier:
        lines.append("Earlier questions of the conversation: " + " | ".join(earlier))
    return "\n".join(lines)


def _numbered(texts: Sequence[str]) -> str:
    return "\n".join(f"{i}. {text}" for i, text in enumerate(texts, 1))


def creation_messages(
    question: str, earlier: Sequence[str], passages: Sequence[str], nuggets: Sequence[str], max_nuggets: int
) -> Messages:
    shown = "\n".join(f"[{i}] {text}" for i, text in enumerate(passages, 1))
    user = (
        f"{_question_block(question, earlier)}\n\nPassages:\n{shown}\n\n"
        f"Nuggets so far ({len(nuggets)}): {json.dumps(list(nuggets), ensure_ascii=False)}\n\n"
        "Revise the list of nuggets with what these passages say: add facts that help answer the question, "
        "drop repetitions, keep each nugget between 1 and 12 words, and keep at most "
        f"{max_nuggets} nuggets, the most important first. Use only the passages and the list so far. "
        "If nothing needs to change, return the list as it is.\n"
        f"Reply with the whole list only, as {NUGGET_LIST_FORMAT}."
    )
    return [{"role": "system", "content": CREATE_SYSTEM}, {"role": "user", "content": user}]


def label_messages(question: str, earlier: Sequence[str], nuggets: Sequence[str]) -> Messages:
    user = (
        f"{_question_block(question, earlier)}\n\nNuggets:\n{_numbered(nuggets)}\n\n"
        f"For each of the {len(nuggets)} nuggets, say whether it is vital (a good answer must contain it) or okay "
        "(worth having, not required).\n"
        f'Reply with a JSON array of {len(nuggets)} labels, each "vital" or "okay", in the order of the nuggets.'
    )
    return [{"role": "system", "content": LABEL_SYSTEM}, {"role": "user", "content": user}]


def assign_messages(question: str, earlier: Sequence[str], answer: str, nuggets: Sequence[str]) -> Messages:
    user = (
        f"{_question_block(question, earlier)}\n\nAnswer: {answer}\n\nNuggets:\n{_numbered(nuggets)}\n\n"
        f"For each of the {len(nuggets)} nuggets, say how far the answer conveys it: support (fully), "
        "partial_support (in part, or only implied), not_support (not at all).\n"
        f'Reply with a JSON array of {len(nuggets)} labels, each "support", "partial_support" or "not_support", '
        "in the order of the nuggets."
    )
    return [{"role": "system", "content": ASSIGN_SYSTEM}, {"role": "user", "content": user}]


def support_messages(sentence: str, passage: str) -> Messages:
    user = (
        f"Sentence: {sentence}\n\nCited passage: {passage}\n\n"
        "Does the passage back up the sentence? full_support: everything the sentence states is in the passage; "
        "partial_support: some of it is; no_support: none of it is, or the passage contradicts it.\n"
        "Reply with one word: full_support, partial_support or no_support."
    )
    return [{"role": "system", "content": SUPPORT_SYSTEM}, {"role": "user", "content": user}]


def _array(text: str) -> list[object]:
    """A JSON array, or a Python list literal (nuggetizer's models answer in either)."""
    try:
        value = extract_json(text)
    except ExtractionError:
        value = None
    if not isinstance(value, list):
        match = _ARRAY.search(text or "")
        try:
            value = ast.literal_eval(match.group(0)) if match else None
        except (ValueError, SyntaxError):
            value = None
    if not isinstance(value, list):
        raise ExtractionError("no list found in the reply")
    return value


def parse_nugget_list(text: str) -> list[str]:
    """The revised nugget list: its non-empty strings, stripped, each once, in order."""
    items = _array(text)
    if not all(isinstance(item, str) for item in items):
        raise ExtractionError("the list must hold strings only")
    return list(dict.fromkeys(item.strip() for item in items if isinstance(item, str) and item.strip()))


def parse_labels(text: str, count: int, allowed: Sequence[str]) -> list[str]:
    labels = [str(item).strip().lower().replace(" ", "_") for item in _array(text)]
    if len(labels) != count:
        raise ExtractionError(f"{len(labels)} labels for {count} nuggets")
    wrong = [label for label in labels if label not in allowed]
    if wrong:
        raise ExtractionError(f"label {wrong[0]!r} is not one of {', '.join(allowed)}")
    return labels


class LabelReader:
    """Reads a reply of ``count`` labels from ``allowed``, and says that format when a reply is asked again."""

    def __init__(self, count: int, allowed: Sequence[str]) -> None:
        self.count = count
        self.allowed = tuple(allowed)

    def __call__(self, text: str) -> list[str]:
        return parse_labels(text, self.count, self.allowed)

    @property
    def reply_format(self) -> str:
        return f"a JSON array of exactly {self.count} labels, each one of: {', '.join(self.allowed)}"


def importance_reader(count: int) -> LabelReader:
    return LabelReader(count, ASKED_IMPORTANCES)


def assignment_reader(count: int) -> LabelReader:
    return LabelReader(count, ASKED_ASSIGNMENTS)


def parse_support(text: str) -> str:
    """full_support, partial_support or no_support: the first such word of the reply ("full" etc. accepted)."""
    match = _CITATION_WORD.search(text or "")
    if match is None:
        raise ExtractionError("no support level (full_support, partial_support, no_support) in the reply")
    word = match.group(1).lower()
    if word in CITATION_SUPPORT:
        return word
    return {"full": "full_support", "partial": "partial_support"}.get(word, "no_support")


SUPPORT_FORMAT = "one word: full_support, partial_support or no_support"
