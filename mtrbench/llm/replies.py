"""Turn a judge's free-text reply into a value, or refuse with a short reason.

Every extractor raises ``ExtractionError`` rather than guessing: a reply that cannot be read
unambiguously is retried or recorded as a failure by the client, never silently scored.

When a reply contains several candidates of the same kind (a judge that discusses other ratings or
documents before concluding), the last one wins: judges are prompted to justify first and give the
verdict at the end, as in the RAD-Bench and MTR-EVAL prompts. That rule applies only to labelled forms
(``[[7]]``, ``Rating: 7``, ``Document ID: [3]``); unlabelled candidates (``[3]``, ``Document 3``) must
agree, or agree on the last line, else the reply is ambiguous.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any


class ExtractionError(ValueError):
    """No valid value could be read from a reply; the message is a short reason."""


_NUMBER = r"[-+]?\d+(?:\.\d+)?"
_DOUBLE_BRACKET = re.compile(r"\[\[\s*(" + _NUMBER + r")\s*\]\]")
# "Rating: 4", "**Rating:** 4", "****Rating:**** 2", "Score = 7/10", "deserves a rating of 4", "the score is 3"
_LABELLED_RATING = re.compile(
    r"\b(?:rating|score)\b[*_\s]*(?:[:=\-]|\bof\b|\bis\b)[*_\s:]*[\[(]?\s*(" + _NUMBER + r")(?!\d)(?!\.\d)",
    re.IGNORECASE)
_SINGLE_BRACKET = re.compile(r"(?<!\[)\[\s*(" + _NUMBER + r")\s*\](?!\])")
_BARE_NUMBER = re.compile(r"^[*_\s]*(" + _NUMBER + r")(?:\s*/\s*\d+)?[*_\s.]*$")
_RATING_KEYS = ("rating", "score")


def _require_text(text: Any) -> str:
    if not isinstance(text, str):
        raise ExtractionError(f"reply is {type(text).__name__}, not text")
    if not text.strip():
        raise ExtractionError("empty reply")
    return text


def _in_range(value: float, low: float, high: float, what: str) -> float:
    if not low <= value <= high:
        raise ExtractionError(f"{what} {value:g} outside {low:g}-{high:g}")
    return value


def extract_rating(text: str, low: float, high: float) -> float:
    """The judge's rating: ``[[7]]`` first, then a JSON ``rating``/``score`` field, then ``Rating: 7``,
    then ``[7]``, then a reply that is just a number. Out of ``[low, high]`` -> ExtractionError."""
    text = _require_text(text)
    found = _DOUBLE_BRACKET.findall(text)
    if found:
        return _in_range(float(found[-1]), low, high, "rating")
    _, field = _json_field(text, _RATING_KEYS)
    if field is not None:
        value = field[1]
        number = _as_number(value)
        if number is None:
            raise ExtractionError(f"rating field is not a number: {str(value)[:40]!r}")
        return _in_range(number, low, high, "rating")
    found = _LABELLED_RATING.findall(text)
    if found:
        return _in_range(float(found[-1]), low, high, "rating")
    for pattern in (_SINGLE_BRACKET, _BARE_NUMBER):
        picked = _agreed(pattern, text, "rating")
        if picked is not None:
            return _in_range(float(picked), low, high, "rating")
    raise ExtractionError("no rating found (expected e.g. 'Rating: [[5]]')")


def _agreed(pattern: re.Pattern[str], text: str, what: str) -> str | None:
    """The value a weak (unlabelled) pattern finds, if unambiguous: all matches agree, or else all matches
    on the reply's last non-empty line agree (a verdict given at the end). Disagreement -> ExtractionError."""
    found = pattern.findall(text)
    if not found:
        return None
    if len({float(v) for v in found}) == 1:
        return found[-1]
    last_line = [line for line in text.splitlines() if line.strip()][-1]
    on_last = pattern.findall(last_line)
    if on_last and len({float(v) for v in on_last}) == 1:
        return on_last[-1]
    shown = ", ".join(dict.fromkeys(found))
    raise ExtractionError(f"ambiguous {what}: several candidates ({shown}) and none labelled")


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        match = re.fullmatch(r"\s*\[*\s*(" + _NUMBER + r")\s*\]*\s*(?:/\s*\d+\s*)?", value)
        if match:
            return float(match.group(1))
    return None


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """Plain JSON, a fenced code block (```json ... ```), or the first JSON object/array found in prose.

    In prose, an object (or an array holding objects) is preferred over an earlier bare array, so a
    citation like "[1]" before the answer's JSON is not taken for the answer.
    """
    text = _require_text(text)
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    for language, body in _FENCE.findall(text):
        if language.lower() not in ("", "json", "json5", "jsonc"):
            continue
        try:
            return json.loads(body.strip())
        except json.JSONDecodeError:
            continue
    decoder = json.JSONDecoder()
    first_array: Any = None
    position = 0
    while True:
        starts = [i for i in (text.find("{", position), text.find("[", position)) if i >= 0]
        if not starts:
            break
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            position = start + 1
            continue
        if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, dict) for v in value)):
            return value
        if first_array is None:
            first_array = value
        position = end
    if first_array is not None:
        return first_array
    raise ExtractionError("no JSON object found")


_YES_WORDS = {"yes", "true", "relevant"}
_NO_WORDS = {"no", "false", "irrelevant", "not relevant"}
_YES_NO_KEYS = ("response", "answer", "decision", "verdict", "judgment", "judgement", "label", "relevant",
                "is_relevant", "result")
_LABELLED_YES_NO = re.compile(
    r"\b(?:final\s+)?(?:response|answer|decision|verdict|judg(?:e)?ment|label)\b[*_\s\"']*[:=][*_\s\"']*"
    r"(yes|no)\b", re.IGNORECASE)
_WORD_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def _yes_no_value(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = re.sub(r"[^a-z ]", "", value.strip().lower()).strip()
        if word in _YES_WORDS:
            return True
        if word in _NO_WORDS:
            return False
    return None


def _json_field(text: str, keys: Sequence[str]) -> tuple[bool, tuple[str, Any] | None]:
    """(the reply holds a JSON object, (key, value) of the first of ``keys`` it has, case-insensitive)."""
    try:
        data = extract_json(text)
    except ExtractionError:
        return False, None
    if not isinstance(data, dict):
        return False, None
    lowered = {str(k).strip().lower(): v for k, v in data.items()}
    return True, next(((key, lowered[key]) for key in keys if key in lowered), None)


def extract_yes_no(text: str) -> bool:
    """``{"response": "yes"}``, ``Yes.``, ``**No**``, ``Answer: no`` ... -> bool; ambiguous -> ExtractionError."""
    text = _require_text(text)
    is_object, field = _json_field(text, _YES_NO_KEYS)
    if field is not None:
        key, value = field
        verdict = _yes_no_value(value)
        if verdict is None:
            raise ExtractionError(f"'{key}' is neither yes nor no: {str(value)[:40]!r}")
        return verdict
    if is_object:
        raise ExtractionError("JSON reply has no 'response' field")
    labelled = _LABELLED_YES_NO.findall(text)
    if labelled:
        return labelled[-1].lower() == "yes"
    plain = re.sub(r"[*_#`>\"']", " ", text).strip()
    first_sentence = re.split(r"[.!?\n]", plain, maxsplit=1)[0]
    words = [w.lower() for w in _WORD_YES_NO.findall(plain)]
    leading = re.match(r"\s*(yes|no)\b", plain, re.IGNORECASE)
    if leading:
        verdict = leading.group(1).lower()
        opposite = "no" if verdict == "yes" else "yes"
        if opposite in (w.lower() for w in _WORD_YES_NO.findall(first_sentence)):
            raise ExtractionError("reply says both yes and no")
        return verdict == "yes"
    if set(words) == {"yes"}:
        return True
    if set(words) == {"no"}:
        return False
    if words:
        raise ExtractionError("reply says both yes and no")
    raise ExtractionError("no yes/no answer found")


_CHOICE_KEYS = ("document", "document_id", "doc", "doc_id", "id", "choice", "answer", "selected", "selection",
                "response")
_LABELLED_CHOICE = re.compile(
    r"\b(?:document\s*id|doc(?:ument)?\s*id|answer|choice|selected\s+document|final\s+answer)\b[*_\s]*[:=\-]"
    r"[*_\s]*\[?\s*(?:document|doc)?\s*(\d+)\s*\]?", re.IGNORECASE)
_BRACKET_DOCUMENT = re.compile(r"\[\s*(?:document|doc)\s*(?:id)?\s*[:#]?\s*(\d+)\s*\]", re.IGNORECASE)
_BRACKET_NUMBER = re.compile(r"(?<!\[)\[\s*(\d+)\s*\](?!\])")
_WORD_DOCUMENT = re.compile(r"\b(?:document|doc)\s*[#:]?\s*(\d+)\b", re.IGNORECASE)
_BARE_CHOICE = re.compile(r"^[*_\s\[(]*(\d+)[*_\s\])\.]*$")


def _choice_value(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        match = re.fullmatch(r"\s*\[?\s*(?:document|doc)?\s*(?:id)?\s*[:#]?\s*(\d+)\s*\]?\s*\.?\s*", value,
                             re.IGNORECASE)
        if match:
            return int(match.group(1))
    return None


def extract_choice(text: str, n_options: int) -> int:
    """The chosen option (1-based): ``{"document": 3}``, ``Document ID: [3]``, ``[Document 3]``, ``[3]``,
    ``Document 3`` or a bare ``3``. A choice outside 1..n_options -> ExtractionError."""
    text = _require_text(text)
    _, field = _json_field(text, _CHOICE_KEYS)
    if field is not None:
        key, value = field
        choice = _choice_value(value)
        if choice is None:
            raise ExtractionError(f"'{key}' is not a document number: {str(value)[:40]!r}")
        return int(_in_range(choice, 1, n_options, "choice"))
    found = _LABELLED_CHOICE.findall(text)
    if found:
        return int(_in_range(int(found[-1]), 1, n_options, "choice"))
    for pattern in (_BRACKET_DOCUMENT, _BRACKET_NUMBER, _WORD_DOCUMENT, _BARE_CHOICE):
        picked = _agreed(pattern, text, "document")
        if picked is not None:
            return int(_in_range(int(picked), 1, n_options, "choice"))
    raise ExtractionError("no document choice found (expected e.g. '[Document 3]')")
