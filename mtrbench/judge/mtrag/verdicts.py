"""Readings of the idk_eval and underspecified_eval judges' replies, as the official code reads them."""

from __future__ import annotations

import json
import re

_FIRST_WORD = re.compile(r"\s*([A-Za-z]+)")
_FENCED = re.compile(r"```json\s*(.*?)\s*```", re.DOTALL)
_BRACED = re.compile(r"\{\s*(.*?)\s*\}", re.DOTALL)
_BAD_ESCAPE = re.compile(r"\\(?![\"\\/bfnrt]|u[0-9a-fA-F]{4})")


def idk_verdict(reply: str | None) -> float | None:
    """idk_eval from the reply's first word: "yes" 1, "no" 0, any other word 0.5; None when the reply does not
    start with a word (the official "unknown")."""
    match = _FIRST_WORD.match(reply or "")
    if match is None:
        return None
    word = match.group(1).lower()
    return 1.0 if word == "yes" else 0.0 if word == "no" else 0.5


def clarification_verdict(reply: str | None) -> float:
    """underspecified_eval from the reply's JSON ``decision``: "yes" 1, "no" 0, anything else 0.5, and 0.5 when
    no JSON object can be read. The object is the first fenced ```json block if the reply has one, else the
    first ``{...}``; backslashes that do not start a JSON escape are dropped first."""
    text = reply or ""
    match = (_FENCED if "```json" in text else _BRACED).search(text)
    if match is None:
        return 0.5
    body = _BAD_ESCAPE.sub("", match.group(1))
    body = body if body.startswith("{") else "{" + body
    body = body if body.endswith("}") else body + "}"
    try:
        parsed = json.loads(body)
        decision = str(parsed.get("decision", "")).lower()
    except (json.JSONDecodeError, AttributeError):
        return 0.5
    return 1.0 if decision == "yes" else 0.0 if decision == "no" else 0.5
