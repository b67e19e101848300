"""The static leaderboard page in headless Chromium: row count, sorting on a header click, screenshot."""

from __future__ import annotations

import functools
import http.server
import os
import re
import threading
from pathlib import Path

import pytest

from mtrbench.cli import main
from mtrbench.leaderboard.build import build_document
from mtrbench.leaderboard.entries import load_leaderboard_entries
from mtrbench.leaderboard.schema import leaderboards_dir

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(os.environ.get("MTRBENCH_TEST_ARTIFACTS", Path(__file__).resolve().parent / "artifacts"))


def _browser_or_skip():
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


@pytest.fixture(scope="module")
def document():
    """The committed sample plus the transcribed published numbers (when present): several groups, missing values."""
    sourced = load_leaderboard_entries(leaderboards_dir() / "sample.json")
    reported = leaderboards_dir() / "reported.json"
    if reported.is_file():
        sourced += load_leaderboard_entries(reported)
    return build_document(sourced, name="page-test", description="sample runs <and> published numbers")


@pytest.fixture(scope="module")
def site(document, tmp_path_factory) -> Path:
    import json

    folder = tmp_path_factory.mktemp("site")
    source = folder / "page-test.json"
    source.write_text(json.dumps(document))
    assert main(["leaderboard", "html", str(source), "-o", str(folder / "out")]) == 0
    return folder / "out"


@pytest.fixture(scope="module")
def server(site):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


def test_page_has_no_external_resources(site, document):
    html = (site / "index.html").read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]*\ssrc\s*=", html, re.I)
    assert not re.search(r"<link\b", html, re.I)
    assert not re.search(r"\s(?:src|href|xlink:href)\s*=\s*[\"']?(?:https?:)?//", html, re.I)
    assert "@import" not in html and "url(" not in html
    # The description's markup characters are escaped, the data is embedded.
    assert "sample runs &lt;and&gt; published numbers" in html
    assert 'id="leaderboard-data"' in html and html.count('data-entry-id="') == len(document["entries"])


def _column_values(page, index: int) -> list[str]:
    return page.eval_on_selector_all(
        "#entries tbody tr", f"rows => rows.map(r => r.cells[{index}].getAttribute('data-sort'))")


def test_page_in_headless_chromium(server, document, tmp_path):
    sync_playwright = _browser_or_skip()
    requests: list[str] = []
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000})
        try:
            page = context.new_page()
            page.on("request", lambda request: requests.append(request.url))
            page.goto(server + "index.html")
            page.wait_for_load_state("load")

            assert page.locator("#entries tbody tr").count() == len(document["entries"])
            assert page.evaluate("window.leaderboard.entries.length") == len(document["entries"])

            headers = page.eval_on_selector_all("#entries thead th", "hs => hs.map(h => h.textContent.trim())")
            index = headers.index("nDCG@10")
            expected = sorted(e["scores"]["ndcg_at_10"] for e in document["entries"] if "ndcg_at_10" in e["scores"])
            missing = sum("ndcg_at_10" not in e["scores"] for e in document["entries"])
            header = page.locator("#entries thead th").nth(index)

            header.click()
            assert header.get_attribute("aria-sort") == "ascending"
            values = _column_values(page, index)
            assert [float(v) for v in values if v] == expected
            assert values[len(expected):] == [""] * missing  # missing values go last

            header.click()
            assert header.get_attribute("aria-sort") == "descending"
            values = _column_values(page, index)
            assert [float(v) for v in values if v] == expected[::-1]
            assert values[len(expected):] == [""] * missing
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            shot = ARTIFACTS / "leaderboard_page.png"  # sorted by nDCG@10, best first
            page.screenshot(path=str(shot), full_page=False)
            assert shot.stat().st_size > 10_000

            # Settings are shown per entry: the first row's details open on a click.
            first = page.locator("#entries tbody tr").first
            first.locator("summary").click()
            assert '"history"' in first.locator("details pre").inner_text()

            # A bar chart per task of every group (plus the average chart where a group averages one metric).
            charts = sum(len(g["tasks"]) + (1 if g["averages"] and len(set(g["main_scores"].values())) == 1 else 0)
                         for g in document["groups"])
            assert page.locator("section.group figure svg").count() == charts
        finally:
            context.close()
    assert requests and all(url.startswith(server) for url in requests), requests
