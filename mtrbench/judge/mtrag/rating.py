"""RB_llm's reading of a judge reply: the official ``extract_rating`` cascade (``judge_utils.py``).

Text from "for example:" to the end of its line is dropped first (the prompt's own example must not count).
Every pattern of the cascade is then tried in order and each one that matches overwrites the value with its
first match / 10, so the last matching pattern wins. A value outside (0, 1], or no match at all, gives 0.5.
"""

from __future__ import annotations

import re

FALLBACK = 0.5
_EXAMPLE = re.compile(r"for example:.*?$", re.IGNORECASE | re.MULTILINE)
# The official order; which rating a reply yields depends on it (last match wins).
CASCADE = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"Rating: \[\[(\d+)\]\]",
        r"Rating: (\d+)",
        r"\[\[(\d+)\]\]",
        r"\[(\d+)\]",
        r"Rating: \[\[([0-9]*\.?[0-9]+)\]\]",
        r"Overall Rating: ([0-9]*\.?[0-9]+)",
        r"Score: ([0-9]*\.?[0-9]+)/10",
        r"Score: ([0-9]*\.?[0-9]+)",
        r"\[Rating\]\n(\d+)",
        r"Rating: \[\[(\d+)/10\]\]",
        r"Rating: \[\[([-+]?\d*\.?\d+)",
        r"([-+]?\d*\.?\d+) out of 10",
    )
)


def rb_llm_rating(reply: str | None) -> float:
    """The reply's rating on [0, 1] (a 1-10 rating / 10), 0.5 when it cannot be read or is out of range.
    A missing reply reads as the text "None", as the official ``str(text)`` makes it."""
    text = _EXAMPLE.sub("", str(reply))
    value = FALLBACK
    for pattern in CASCADE:
        found = pattern.findall(text)
        if found:
            value = float(found[0]) / 10
    return value if 0 < value <= 1 else FALLBACK


def median(values: list[float]) -> float:
    """The median over judges (numpy's: the mean of the two middle values for an even count)."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
