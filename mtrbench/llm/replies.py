"""One reading of every model reply: ratings, verdicts, yes/no, document choices, JSON, one-line texts.

Judges (``judge run``, ``audit``, ``assess``), eval's rewriter and synthesize's agents all parse their
replies here, under one leniency policy (docs/llm-judges.md, "Which replies are accepted"):

- a value is read from, in this order: a double-bracketed value (``[[7]]``, ``[[CORRECT]]``); a JSON
  object's field (plain, in a code fence, or inside prose); a labelled value (``Rating: 7``,
  ``**Verdict:** [CORRECT]``, ``[Rating]\n7``: markdown emphasis, quotes and brackets around label or
  value are ignored, as is any text after the value); for numbers, a value on the stated scale
  (``7/10``, ``7 out of 10``); an unlabelled single-bracketed value or, for words, the reply's first word;
  a reply that is nothing but the value;
- when a form occurs several times, a labelled or double-bracketed one: the last wins (judges justify
  first and conclude at the end, as the RAD-Bench and MTR-EVAL prompts ask); an unlabelled one: all must
  agree, or those on the last line must, else the reply is ambiguous;
- refused, never guessed: an empty reply, no value in any form, a value outside the scale or the label
  set (never clamped), JSON whose field holds something else, unlabelled candidates that disagree.

Every refusal is an ``ExtractionError`` with a short reason: the client asks again and then records a
failure; nothing is scored from a reply that did not parse.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


class ExtractionError(ValueError):
    """No valid value could be read from a reply; the message is a short reason."""


_NUMBER = r"[-+]?\d+(?:\.\d+)?"
# The shared label grammar: a label (in brackets or not), markdown emphasis, quotes or a closing bracket,
# a separator (":", "=", "-", "of", "is", or a line break after "[Label]"), then emphasis, quotes and
# opening brackets before the value.
_AFTER_LABEL = r"[*_\s\"'`\])]*?"
_SEPARATOR = r"(?:[:=\-]|\bof\b|\bis\b|(?<=\])\s*\n)"
_BEFORE_VALUE = r"[*_\s\"'`:\[(<]*"


def _labelled(labels: str, value: str) -> re.Pattern[str]:
    """``label: value`` in every form the policy accepts; group 1 is the value."""
    return re.compile(r"\b(?:" + labels + r")\b" + _AFTER_LABEL + _SEPARATOR + _BEFORE_VALUE + value, re.IGNORECASE)


_DOUBLE_BRACKET = re.compile(r"\[\[\s*(" + _NUMBER + r")\s*(?:/\s*\d+\s*)?\]\]")
# "Rating: 4", "**Rating:** 4", "****Rating:**** 2", "Score = 7/10", "deserves a rating of 4", "the score is 3",
# "[Rating]\n4", "Overall Rating: 4"
_LABELLED_RATING = _labelled(r"rating|score", r"(" + _NUMBER + r")(?!\d)(?!\.\d)")
_ON_SCALE = re.compile(
    r"(?<![\d.])(" + _NUMBER + r")\s*(?:/|\bout\s+of\b)\s*(\d+(?:\.\d+)?)(?!\d)(?!\.\d)", re.IGNORECASE
)
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
    then a value on the scale (``7/10``, ``7 out of 10`` with ``high`` as the denominator), then ``[7]``,
    then a reply that is just a number. Out of ``[low, high]`` -> ExtractionError."""
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
    on_scale = [value for value, top in _ON_SCALE.findall(text) if float(top) == high]
    if on_scale:
        return _in_range(float(on_scale[-1]), low, high, "rating")
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
    if len({_same(v) for v in found}) == 1:
        return found[-1]
    last_line = [line for line in text.splitlines() if line.strip()][-1]
    on_last = pattern.findall(last_line)
    if on_last and len({_same(v) for v in on_last}) == 1:
        return on_last[-1]
    shown = ", ".join(dict.fromkeys(found))
    raise ExtractionError(f"ambiguous {what}: several candidates ({shown}) and none labelled")


def _same(value: str) -> float | str:
    """What two candidates must share to agree: the number ("7" and "7.0"), else the word in any case."""
    try:
        return float(value)
    except ValueError:
        return value.lower()


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
_YES_NO_KEYS = (
    "response",
    "answer",
    "decision",
    "verdict",
    "judgment",
    "judgement",
    "label",
    "relevant",
    "is_relevant",
    "result",
)
_YES_NO_LABELS = r"response|answer|decision|verdict|judg(?:e)?ment|label"
_VERDICT_KEYS = ("verdict", "judgment", "judgement", "decision", "label", "answer", "response", "result")
_VERDICT_LABELS = r"verdict|judg(?:e)?ment|decision|label"
_MARKDOWN = re.compile(r"[*_#`>\"']")


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


@dataclass(frozen=True)
class _WordScale:
    """A two-word answer (yes/no, CORRECT/INCORRECT) and where a reply may state it."""

    positive: str
    negative: str
    labels: str  # regex alternatives for the label ("verdict|decision")
    keys: tuple[str, ...]  # JSON fields, in order of preference
    json_value: Callable[[Any], bool | None]  # a JSON field's value -> the answer, None when it is neither
    example: str  # shown in the "not found" reason

    def word_pattern(self) -> str:
        words = sorted((self.positive, self.negative), key=len, reverse=True)  # INCORRECT before CORRECT
        return r"(" + "|".join(re.escape(w) for w in words) + r")\b"

    def value(self, word: str) -> bool:
        return word.lower() == self.positive.lower()


def _extract_word(text: str, scale: _WordScale) -> bool:
    text = _require_text(text)
    word = scale.word_pattern()
    # A word answer given twice with different values is settled by the last line, never by position alone:
    # a number may be revised in prose ("a [[2]] would be harsh ... [[6]]"), two opposite verdicts side by
    # side on the concluding line cannot.
    doubled = _agreed(re.compile(r"\[\[\s*" + word + r"\s*\]\]", re.IGNORECASE), text, "answer")
    if doubled is not None:
        return scale.value(doubled)
    is_object, field = _json_field(text, scale.keys)
    if field is not None:
        key, value = field
        answer = scale.json_value(value)
        if answer is None:
            raise ExtractionError(f"'{key}' is neither {scale.positive} nor {scale.negative}: {str(value)[:40]!r}")
        return answer
    if is_object:
        raise ExtractionError(f"JSON reply has no '{scale.keys[0]}' field")
    labelled = _agreed(_labelled(scale.labels, word), text, "answer")
    if labelled is not None:
        return scale.value(labelled)
    bracketed = _agreed(re.compile(r"(?<!\[)\[\s*" + word + r"\s*\](?!\])", re.IGNORECASE), text, "answer")
    if bracketed is not None:
        return scale.value(bracketed)
    plain = _MARKDOWN.sub(" ", text).strip()
    leading = re.match(r"\s*" + word, plain, re.IGNORECASE)
    if leading:
        first_sentence = re.split(r"[.!?\n]", plain, maxsplit=1)[0]
        if len({w.lower() for w in re.findall(r"\b" + word, first_sentence, re.IGNORECASE)}) > 1:
            raise ExtractionError(f"reply says both {scale.positive} and {scale.negative}")
        return scale.value(leading.group(1))
    raise ExtractionError(f"no {scale.positive}/{scale.negative} answer found (expected e.g. {scale.example!r})")


def _verdict_json_value(positive: str, negative: str) -> Callable[[Any], bool | None]:
    def read(value: Any) -> bool | None:
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            word = re.sub(r"[^a-z]", "", value.lower())
            return True if word == positive.lower() else False if word == negative.lower() else None
        return None

    return read


_YES_NO = _WordScale("yes", "no", _YES_NO_LABELS, _YES_NO_KEYS, _yes_no_value, '{"response": "yes"}')


def extract_yes_no(text: str) -> bool:
    """``{"response": "yes"}``, ``Yes.``, ``**No**``, ``Answer: no`` ... -> bool; ambiguous -> ExtractionError."""
    return _extract_word(text, _YES_NO)


def extract_verdict(text: str, positive: str = "CORRECT", negative: str = "INCORRECT") -> bool:
    """A two-word verdict: ``[[CORRECT]]``, ``{"verdict": "correct"}``, ``Verdict: [CORRECT]``, ``[INCORRECT]``,
    ``**CORRECT**`` or a reply starting with the word. True for ``positive``; neither -> ExtractionError."""
    scale = _WordScale(
        positive,
        negative,
        _VERDICT_LABELS,
        _VERDICT_KEYS,
        _verdict_json_value(positive, negative),
        f"Verdict: [[{positive}]]",
    )
    return _extract_word(text, scale)


def extract_line(text: str, labels: str, what: str) -> str:
    """A one-line text (a rewrite, a polished query): the last line labelled by one of ``labels`` (regex
    alternatives, e.g. ``"rewrite|rewritten question"``), else the reply if it is a single line. Markdown
    emphasis, a code fence and the quotes around it are dropped; several unlabelled lines -> ExtractionError."""
    text = _require_text(text).strip()
    fenced = re.fullmatch(r"```[A-Za-z]*\s*\n?(.*?)\n?```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1).strip()
    found = re.findall(r"^[\W_]*(?:" + labels + r")\b[\W_]*?:[*_\s]*(.+)$", text, re.IGNORECASE | re.MULTILINE)
    if found:
        line = found[-1]
    elif "\n" in text:
        raise ExtractionError(f"several lines and no '{what.capitalize()}:' line")
    else:
        line = text
    line = " ".join(line.replace("**", " ").replace("__", " ").split())
    line = line.strip().strip("\"'“”‘’`").strip()
    if not line:
        raise ExtractionError(f"empty {what}")
    return line


_CHOICE_KEYS = (
    "document",
    "document_id",
    "doc",
    "doc_id",
    "id",
    "choice",
    "answer",
    "selected",
    "selection",
    "response",
)
_LABELLED_CHOICE = re.compile(
    r"\b(?:document\s*id|doc(?:ument)?\s*id|answer|choice|selected\s+document|final\s+answer)\b[*_\s]*[:=\-]"
    r"[*_\s]*\[?\s*(?:document|doc)?\s*(\d+)\s*\]?",
    re.IGNORECASE,
)
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
        match = re.fullmatch(
            r"\s*\[?\s*(?:document|doc)?\s*(?:id)?\s*[:#]?\s*(\d+)\s*\]?\s*\.?\s*", value, re.IGNORECASE
        )
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
