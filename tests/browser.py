"""Shared by the headless-Chromium tests (the leaderboard page, the explorer): Debian's Chromium driven by
playwright; skipped where either is missing, except under CI=true, where the browser tests must run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"


def browser_or_skip():
    """playwright's ``sync_playwright``, or a skip (a failure under CI) naming what is missing."""
    missing = []
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing.append("the python package playwright")
        sync_playwright = None
    if not Path(CHROMIUM).is_file():
        missing.append(CHROMIUM)
    if missing:
        message = f"{' and '.join(missing)} not installed"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (CI must run the browser test)")
        pytest.skip(message)
    return sync_playwright
