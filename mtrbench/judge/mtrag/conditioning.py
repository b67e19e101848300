"""The ``*_idk`` and ``*_idk_underspecified`` variants: a metric conditioned on answerability, as the official
``get_idk_score`` and ``get_idk_underspec_score`` (``judge_wrapper.py``).

``idk`` is the idk_eval verdict: 1 the answer says it cannot answer, 0.5 partly, 0 not, None when the judge's
reply had no leading word (the official "unknown", which matches none of the branches below).
"""

from __future__ import annotations

NO_ANSWER_EXPECTED = ("UNANSWERABLE", "CONVERSATIONAL")
UNDERSPECIFIED = "UNDERSPECIFIED"


def idk_conditioned(value: float, answerability: str | None, idk: float | None) -> float:
    """An unanswerable or conversational turn scores 1 for an "I don't know" and 0 for anything else (a partial
    "I don't know" included); any other turn answered with an "I don't know" scores 0; otherwise ``value``."""
    if answerability in NO_ANSWER_EXPECTED:
        if idk == 1:
            return 1.0
        if idk in (0, 0.5):
            return 0.0
        return value
    if idk == 1:
        return 0.0
    return value


def idk_underspecified_conditioned(
    value: float, answerability: str | None, idk: float | None, clarification: float | None
) -> float:
    """As :func:`idk_conditioned`, but an underspecified turn scores 1 only for a clarification request
    (``clarification`` = the underspecified_eval verdict, 1 yes) and 0 otherwise."""
    if answerability == UNDERSPECIFIED:
        return 1.0 if clarification == 1 else 0.0
    return idk_conditioned(value, answerability, idk)
