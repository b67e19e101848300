"""The text normalizations of the official ``run_algorithmic.py``."""

from __future__ import annotations

import re
import string

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_NOT_WORD = re.compile(r"[^\w\s]")


def normalize_text(text: str) -> str:
    """SQuAD-style normalization: lower case, ASCII punctuation removed, then articles, then runs of spaces."""
    without_punctuation = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", without_punctuation).split())


def strip_newline_words(text: str) -> str:
    """Newlines to spaces, every character that is neither a word character nor a space removed, lower case.

    The official code then passes the result through BeautifulSoup's ``get_text`` to drop HTML; with every
    ``<``, ``>`` and ``&`` already removed there is no markup or entity left, so that step changes nothing
    and is not repeated here.
    """
    return _NOT_WORD.sub("", text.replace("\n", " ")).lower()
