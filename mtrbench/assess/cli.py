"""Command-line entry points of this package (registered by ``mtrbench.cli``)."""

from __future__ import annotations


def register(sub) -> dict:
    return {}
