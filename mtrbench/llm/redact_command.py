"""A command line as results record it (``command`` in result and score files): credentials masked.

Two kinds of argument carry them: a URL with ``user:password@`` (an LLM endpoint behind Basic auth; shown as
``***@``, as everywhere else, see :mod:`mtrbench.llm.redact`), and the value of a flag named for a secret: one whose
name ends in key, token, secret or password (``--api-key K``, ``--hf-token=T``). Flags that merely mention one
(``--api-key-env NAME`` names a variable, ``--max-tokens N`` counts) keep their values, so the command still
reproduces the run once the secrets are supplied again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mtrbench.llm.redact import Redactor

MASKED = "***"
SECRET_FLAG = re.compile(r"^--?(?:[a-z0-9]+[-_])*(?:key|apikey|token|secret|password|passwd)$", re.IGNORECASE)


def redact_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with every URL's userinfo and every secret flag's value masked; nothing else changes."""
    hide_userinfo = Redactor()
    redacted: list[str] = []
    value_is_secret = False
    for word in argv:
        if value_is_secret:
            redacted.append(MASKED)
            value_is_secret = False
            continue
        flag, equals, _ = word.partition("=")
        if SECRET_FLAG.match(flag):
            value_is_secret = not equals
            redacted.append(f"{flag}={MASKED}" if equals else word)
        else:
            redacted.append(hide_userinfo(word) if "://" in word else word)
    return redacted


__all__ = ["MASKED", "SECRET_FLAG", "redact_argv"]
