"""Keeping credentials out of everything shown or stored: base URLs and text from servers and exceptions.

A base URL may carry ``user:password@`` (a proxy with Basic auth). It is split off once, when the judge is
configured: the URL kept everywhere (summaries, logs, messages) has none, and the credentials travel only in
the ``Authorization`` header. A ``Redactor`` replaces every form of a judge's secrets (API key, password,
``user:password``, its base64, the whole ``Basic ...`` value) in text that came from a server or an exception,
plus anything that merely looks like a credential (``sk-...`` keys, ``Bearer``/``Basic`` values, URL userinfo).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit, urlunsplit

MASK = "[redacted]"
# A password shorter than this is not replaced on its own (it would mangle ordinary words); it is still
# replaced as part of user:password, its base64 and URL userinfo.
MIN_BARE_SECRET = 4

_TOKEN_LIKE = re.compile(r"\b(?:sk|key|api[_-]?key)[-_][A-Za-z0-9*._-]{6,}", re.IGNORECASE)
_BEARER = re.compile(r"\b(Bearer)\s+[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE)
_BASIC = re.compile(r"\b(Basic)\s+([A-Za-z0-9+/]{4,}={0,2})", re.IGNORECASE)
_USERINFO = re.compile(r"\b([a-z][a-z0-9+.-]*://)[^\s/?#@\"'<>]+@", re.IGNORECASE)


@dataclass(frozen=True, repr=False)
class UrlCredentials:
    """``user:password`` taken out of a base URL (percent-decoded), sent as HTTP Basic auth."""

    username: str
    password: str

    def __repr__(self) -> str:
        return f"UrlCredentials(username={self.username!r}, password=***)"

    def pair(self) -> str:
        return f"{self.username}:{self.password}"

    def encoded(self) -> str:
        return base64.b64encode(self.pair().encode("utf-8")).decode("ascii")

    def header(self) -> str:
        return f"Basic {self.encoded()}"

    def secrets(self) -> list[str]:
        """Every form in which these credentials could come back in a server's or library's text."""
        forms = [
            self.header(),
            self.encoded(),
            self.encoded().rstrip("="),
            self.pair(),
            f"{quote(self.username, safe='')}:{quote(self.password, safe='')}",
        ]
        if len(self.password) >= MIN_BARE_SECRET:
            forms += [self.password, quote(self.password, safe="")]
        return forms


def split_userinfo(url: str) -> tuple[str, UrlCredentials | None]:
    """(the URL without ``user:password@``, the credentials it carried or None)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    clean = urlunsplit((parts.scheme, hostport, parts.path, parts.query, parts.fragment))
    return clean, UrlCredentials(unquote(user), unquote(password))


def public_url(url: str) -> str:
    """The URL as shown to people: ``http://***@host/v1`` when it carries credentials."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    hostport = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, f"***@{hostport}", parts.path, parts.query, parts.fragment))


def _basic_value(match: re.Match) -> str:
    try:
        decoded = base64.b64decode(match.group(2) + "=" * (-len(match.group(2)) % 4), validate=True)
    except (binascii.Error, ValueError):
        return match.group(0)
    # Only a value that decodes to user:password is a credential; "Basic authentication" stays readable.
    return f"{match.group(1)} {MASK}" if b":" in decoded else match.group(0)


class Redactor:
    """``redactor(text)``: known secrets and credential-looking strings replaced by ``[redacted]``."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # longest first, so a secret that contains another is replaced whole
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def known(self, text: str) -> str:
        """Only the exact secrets (for reply texts, where a look-alike pattern could be real content)."""
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return text

    def __call__(self, text: str) -> str:
        text = self.known(text)
        text = _USERINFO.sub(lambda m: f"{m.group(1)}***@", text)
        text = _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)
        text = _BASIC.sub(_basic_value, text)
        return _TOKEN_LIKE.sub(MASK, text)
