"""The static leaderboard page in headless Chromium: row count, sorting on a header click, screenshot."""

from __future__ import annotations

import functools
import http.server
import os
import re
import threading
from html.parser import HTMLParser
from pathlib import Path

import pytest
from browser import CHROMIUM, browser_or_skip

from mtrbench.cli import main
from mtrbench.leaderboard.build import build_document
from mtrbench.leaderboard.entries import load_leaderboard_entries
from mtrbench.leaderboard.schema import leaderboards_dir

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(os.environ.get("MTRBENCH_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "artifacts"))


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """Fresh BM25 results on the sample (two histories, seconds on a CPU): per-query files for per-turn curves."""
    folder = tmp_path_factory.mktemp("results")
    assert main(["eval", "--model", "bm25", "--history", "current,full", "--quiet", "--output-dir", str(folder)]) == 0
    return folder


@pytest.fixture(scope="module")
def document(results):
    """Those runs, the committed sample's MiniLM runs (no result files here: no curves) and the transcribed
    published numbers (when present): several groups, each with its own metrics."""
    from mtrbench.leaderboard.entries import results_in

    sourced = results_in(results) + [
        s for s in load_leaderboard_entries(leaderboards_dir() / "sample.json") if s.entry.model != "bm25"
    ]
    reported = leaderboards_dir() / "reported.json"
    if reported.is_file():
        sourced += load_leaderboard_entries(reported)
    return build_document(sourced, name="page-test", description="sample runs <and> published numbers")


@pytest.fixture(scope="module")
def site(document, results, tmp_path_factory) -> Path:
    import json

    folder = tmp_path_factory.mktemp("site")
    source = folder / "page-test.json"
    source.write_text(json.dumps(document))
    assert main(["leaderboard", "html", str(source), "-o", str(folder / "out"), "--results", str(results)]) == 0
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
    rows = sum(len(g["entries"]) for g in document["groups"])  # an entry shows in each group it belongs to
    assert 'id="leaderboard-data"' in html and html.count('data-entry-id="') == rows


class _Page(HTMLParser):
    """The parts of the page the structure test reads: sections, board tables with their rows and cells, charts."""

    def __init__(self):
        super().__init__()
        self.sections: list[str] = []
        self.tables: list[dict] = []
        self.charts: list[list[tuple[str, float, str]]] = []  # per bar chart: (label, value, colour)
        self.text: list[str] = []
        self._table = self._row = self._cell = None
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self._in_script = True
        elif tag == "section" and "group" in (a.get("class") or ""):
            self.sections.append(a["id"])
        elif tag == "table" and "board" in (a.get("class") or ""):
            self._table = {
                "group": a["data-group"],
                "task": a["data-task"],
                "main": a["data-main"],
                "rows": [],
                "headers": [],
            }
            self.tables.append(self._table)
        elif tag == "th" and self._table is not None:
            self._table["headers"].append(a.get("data-key"))
        elif tag == "tr" and self._table is not None and "data-entry-id" in a:
            self._row = {"id": a["data-entry-id"], "main": a["data-main"], "cells": []}
            self._table["rows"].append(self._row)
        elif tag == "td" and self._row is not None:
            self._cell = {"class": a.get("class") or "", "sort": a.get("data-sort"), "text": ""}
            self._row["cells"].append(self._cell)
        elif tag == "svg" and "bars" in (a.get("class") or ""):
            self.charts.append([])
        elif tag == "g" and "data-value" in a:
            self.charts[-1].append((a["data-label"], float(a["data-value"]), None))
        elif tag == "rect" and "fill" in a and self.charts and self.charts[-1] and self.charts[-1][-1][2] is None:
            label, value, _ = self.charts[-1][-1]
            self.charts[-1][-1] = (label, value, a["fill"])

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False
        elif tag == "table":
            self._table = self._row = None
        elif tag == "td":
            self._cell = None

    def handle_data(self, data):
        if not self._in_script:
            self.text.append(data)
        if self._cell is not None:
            self._cell["text"] += data


@pytest.fixture(scope="module")
def parsed(site) -> _Page:
    page = _Page()
    page.feed((site / "index.html").read_text(encoding="utf-8"))
    return page


def test_page_structure_groups_ordering_and_missing_values(parsed, document):
    groups = document["groups"]
    by_id = {e["id"]: e for e in document["entries"]}
    # One section per pivot table; each comparable group is in exactly one of them, in the groups' order.
    shown = [g for section in parsed.sections for g in section.removeprefix("group-").split("-")]
    assert sorted(shown) == sorted(g["id"] for g in groups) and shown[0] == groups[0]["id"]
    # The sample's two history strategies (one task, otherwise comparable) share one systems x history table.
    histories = [g["id"] for g in groups if g["comparability"]["label"] == "run"]
    assert f"group-{'-'.join(histories)}" in parsed.sections and len(histories) == 2
    # Per task detail: every group's every task keeps its full table (collapsed), best first.
    assert [(t["group"], t["task"]) for t in parsed.tables] == [(g["id"], task) for g in groups for task in g["tasks"]]
    for table, (group, task) in zip(parsed.tables, ((g, t) for g in groups for t in g["tasks"])):
        main_metric = group["main_scores"][task]
        assert table["main"] == main_metric
        assert table["headers"][2] == main_metric  # its own main score first, after rank and entry
        assert {r["id"] for r in table["rows"]} == {i for i in group["entries"] if by_id[i]["task"] == task}
        values = [by_id[r["id"]]["scores"].get(main_metric) for r in table["rows"]]
        present = [v for v in values if v is not None]
        assert present == sorted(present, reverse=True)  # best first, by this group's own main score
        assert values[len(present) :] == [None] * (len(values) - len(present))  # entries without it last
        for row in table["rows"]:
            entry = by_id[row["id"]]
            name = next(c for c in row["cells"] if "entry" in c["class"])["text"]
            assert name and "{" not in name and "history=" not in name  # the table's heading says it once
            for key, cell in zip(table["headers"][2:-1], row["cells"][2:-1]):
                value = entry["scores"].get(key)
                if value is None:
                    assert cell["text"] == "\u2014" and cell["sort"] == ""
                else:
                    assert float(cell["sort"]) == value
    text = "".join(parsed.text)
    assert "None" not in text and "null" not in text
    assert '"history"' not in text  # settings are listed, not dumped as JSON
    for bars in parsed.charts:
        values = [v for _, v, _ in bars]
        assert values == sorted(values, reverse=True)
        assert len({c for _, _, c in bars}) == len(bars)  # distinct colours
        assert all(label for label, _, _ in bars)


def test_a_missing_value_is_an_em_dash(document):
    import copy

    from mtrbench.leaderboard.html import render_page

    changed = copy.deepcopy(document)
    entry = next(e for e in changed["entries"] if e["label"] == "run")
    del entry["scores"]["recall_at_10"]
    page = _Page()
    page.feed(render_page(changed))
    table = next(t for t in page.tables if entry["id"] in {r["id"] for r in t["rows"]})
    column = table["headers"].index("recall_at_10")
    row = next(r for r in table["rows"] if r["id"] == entry["id"])
    assert row["cells"][column]["text"] == "\u2014" and row["cells"][column]["sort"] == ""
    assert "None" not in "".join(page.text)


def test_per_turn_bands_come_from_the_per_query_files(document, results):
    """Each curve's mean per turn is the result file's own per-turn breakdown; the band holds the mean."""
    import json

    from mtrbench.leaderboard.turns import turn_curves

    curves = turn_curves(document, [results])
    run_entries = [e for e in document["entries"] if e["label"] == "run" and e["model"] == "bm25"]
    assert set(curves) == {e["id"] for e in run_entries} and len(curves) == 2  # MiniLM's results are not given
    for entry in run_entries:
        result = json.loads((results / entry["source"]["result_path"]).read_text())
        breakdown = result["mtrbench"]["breakdowns"]["turn"]
        bands = curves[entry["id"]][entry["main_score"]]
        assert [b.turn for b in bands] == sorted(int(t) for t in breakdown)
        for band in bands:
            row = breakdown[str(band.turn)]
            assert band.mean == pytest.approx(row[entry["main_score"]]) and band.n_queries == row["n"]
            assert band.low <= band.mean <= band.high


def test_a_result_without_its_per_query_file_is_skipped_with_a_warning(document, results, tmp_path):
    import shutil

    from mtrbench.leaderboard.turns import turn_curves

    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    removed = next(copy.rglob("history=current/*.per_query.jsonl"))
    removed.unlink()
    warnings: list[str] = []
    curves = turn_curves(document, [copy], warnings)
    assert len(curves) == 1 and len(warnings) == 1 and "per-query file" in warnings[0] and str(removed) in warnings[0]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One headless Chromium for every browser test of this module (it takes seconds to start)."""
    sync_playwright = browser_or_skip()
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("profile")),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            yield context
        finally:
            context.close()


def test_page_in_headless_chromium(browser, server, document, tmp_path):
    requests: list[str] = []
    shots = tmp_path / "screenshots"
    shots.mkdir()
    page = browser.new_page()
    try:
        page.on("request", lambda request: requests.append(request.url))
        page.goto(server + "index.html")
        page.wait_for_load_state("load")
        rows = sum(len(g["entries"]) for g in document["groups"])
        assert page.locator("table.board tbody tr").count() == rows
        assert page.evaluate("window.leaderboard.entries.length") == len(document["entries"])

        # Per group and task, rows are in the order of that group's main score (read from the DOM).
        tables = page.eval_on_selector_all(
            "table.board",
            """ts => ts.map(t => ({group: t.dataset.group,
            task: t.dataset.task, values: Array.from(t.tBodies[0].rows).map(r =>
            r.querySelector('td.main').getAttribute('data-sort'))}))""",
        )
        assert len(tables) == sum(len(g["tasks"]) for g in document["groups"])
        for table in tables:
            present = [float(v) for v in table["values"] if v]
            assert present == sorted(present, reverse=True), table
            assert table["values"][len(present) :] == [""] * (len(table["values"]) - len(present))

        # The detail is closed until asked for; a header click then re-sorts one of its tables: ascending,
        # then descending; missing values stay last.
        board = page.locator("table.board").first
        assert not board.is_visible()
        page.locator("details.more > summary").first.click()
        assert board.is_visible()
        header = board.locator("thead th.main")
        header.click()
        assert header.get_attribute("aria-sort") == "ascending"
        values = board.locator("tbody td.main").evaluate_all("cs => cs.map(c => c.getAttribute('data-sort'))")
        present = [float(v) for v in values if v]
        assert present == sorted(present) and values[len(present) :] == [""] * (len(values) - len(present))
        header.click()
        assert header.get_attribute("aria-sort") == "descending"

        # The pivot's mean column sorts too.
        pivot = page.locator("table.pivot").first
        mean = pivot.locator("thead th.mean")
        mean.click()
        means = pivot.locator("tbody td.mean").evaluate_all("cs => cs.map(c => c.getAttribute('data-sort'))")
        present = [float(v) for v in means if v]
        assert present == sorted(present)

        # Settings are one click away, as a list (not JSON).
        first = board.locator("tbody tr").first
        first.locator("summary").click()
        assert "history" in first.locator("details dl").inner_text()

        # Bars per task, per-turn curves where result files were given (BM25, two histories).
        page.locator("details.more > summary").evaluate_all("ss => ss.forEach(s => s.parentElement.open = true)")
        assert page.locator("svg.bars").count() >= 1
        assert page.locator("svg.turns").count() == 2
        assert page.locator("svg.turns .band").count() == 2
        page.screenshot(path=str(shots / "leaderboard_1400.png"), full_page=True)

        page.set_viewport_size({"width": 390, "height": 844})
        page.reload()
        page.wait_for_load_state("load")
        width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert inner == 390 and width <= inner  # no page-level horizontal overflow on a phone
        page.locator("details.more > summary").evaluate_all("ss => ss.forEach(s => s.parentElement.open = true)")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= inner  # nor with every detail open: wide tables scroll inside their own box
        page.screenshot(path=str(shots / "leaderboard_390.png"), full_page=True)
        for name in ("leaderboard_1400.png", "leaderboard_390.png"):
            assert (shots / name).stat().st_size > 10_000
        if os.environ.get("MTRBENCH_TEST_ARTIFACTS"):  # kept for people to look at (CI uploads them)
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            for shot in shots.iterdir():
                (ARTIFACTS / shot.name).write_bytes(shot.read_bytes())
    finally:
        page.close()
    assert requests and all(url.startswith(server) for url in requests), requests


SCREEN_HEIGHT = 1400  # px: five screens of a 1,400 px wide window are 7,000 px


@pytest.mark.parametrize("names", [("sample",), ("reported",), ("sample", "reported")])
def test_committed_leaderboards_page_is_under_five_screens(browser, names):
    """The committed leaderboards (each, and both in one page) at 1,400 px: under 7,000 px tall, no overflow."""
    from mtrbench.leaderboard.html import render_page

    sourced = [s for name in names for s in load_leaderboard_entries(leaderboards_dir() / f"{name}.json")]
    html = render_page(build_document(sourced, name="-".join(names), description=""))
    page = browser.new_page()
    try:
        page.set_viewport_size({"width": 1400, "height": SCREEN_HEIGHT})
        page.route("**/*", lambda route: route.abort())  # nothing may be fetched
        page.set_content(html, wait_until="load")
        height, width = page.evaluate("[document.documentElement.scrollHeight, document.documentElement.scrollWidth]")
        assert height < 5 * SCREEN_HEIGHT and width <= 1400, (names, height, width)
        page.set_viewport_size({"width": 390, "height": 844})
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
    finally:
        page.close()
