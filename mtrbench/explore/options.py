"""What an explorer shows of each turn (light: the command line reads its defaults before anything loads)."""

from __future__ import annotations

from dataclasses import dataclass

SNIPPET_CHARS = 160


@dataclass(frozen=True)
class ExploreOptions:
    top_k: int = 10  # passages shown per turn and system
    snippet_chars: int = SNIPPET_CHARS  # characters of a passage's text shown
