"""The explorer in headless Chromium, opened from disk (file://), as the leaderboard page's browser test does:
no horizontal overflow at 1,400 and 390 px, sorting and filters change the visible rows as computed here from
the result files, the per-turn numbers and top-k equal the per-query and run files, truncation is struck out,
injected markup stays text, and a rag result shows its answers, citations and verdicts."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from browser import CHROMIUM, browser_or_skip
from explore_support import INJECTED_DOC, INJECTION, embedded, queries, verdict
from test_explore import conversations, per_query, results_by_history, run_top

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
WIDTHS = (1400, 390)


@pytest.fixture(scope="module")
def browser(tmp_path_factory, sample_site, small_site):
    """Started after the sites are built: `mtrbench rag` runs its own event loop, which Playwright's would block."""
    sync_playwright = browser_or_skip()
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("profile")),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


def _open(browser, path: Path, width: int):
    page = browser.new_page()
    page.set_viewport_size({"width": width, "height": 900})
    errors: list[str] = []
    requests: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(path.resolve().as_uri())
    page.wait_for_load_state("load")
    return page, errors, requests


def _no_overflow(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")


def _visible_ids(page) -> list[str]:
    return page.eval_on_selector_all("#conversations tbody tr", "rows => rows.map(r => r.dataset.id)")


def _means(rows: dict[str, dict], ids: list[str], turns: dict[str, list[str]]) -> dict[str, float]:
    return {c: sum(rows[q]["ndcg_at_10"] for q in turns[c]) / len(turns[c]) for c in ids}


def test_list_page_sorts_and_filters(browser, sample_site, sample_bm25_histories):
    results = results_by_history(sample_bm25_histories)
    rows = {h: per_query(p) for h, p in results.items()}
    tops = {h: run_top(p) for h, p in results.items()}
    raw = conversations()
    ids = [c["conversation_id"] for c in raw]
    turns: dict[str, list[str]] = defaultdict(list)
    after: dict[str, bool] = {}
    judged: dict[str, set[str]] = {}
    for c in raw:
        users = [m for m in c["messages"] if m["role"] == "user"]
        for n, message in enumerate(users, 1):
            qid = f"{c['conversation_id']}_{n}"
            turns[c["conversation_id"]].append(qid)
            after[qid] = n > c["switch_turn"]
            judged[qid] = {q["doc_id"] for q in message.get("qrels", [])}
    systems = [s["history"] for s in embedded(sample_site / "index.html")["systems"]]
    for width in WIDTHS:
        page, errors, requests = _open(browser, sample_site / "index.html", width)
        assert _visible_ids(page) == ids and _no_overflow(page) and not errors
        assert all(url.startswith("file://") for url in requests)
        page.close()

    page, errors, _ = _open(browser, sample_site / "index.html", 1400)
    full = _means(rows["full"], ids, turns)
    page.click(f'th[data-key="mean{systems.index("full")}"]')
    assert _visible_ids(page) == sorted(ids, key=lambda c: (full[c], ids.index(c)))
    page.click(f'th[data-key="mean{systems.index("full")}"]')
    assert _visible_ids(page) == sorted(ids, key=lambda c: (-full[c], ids.index(c)))

    page.fill("#search", "varnholm")
    assert set(_visible_ids(page)) == {
        c["conversation_id"]
        for c in raw
        if any("varnholm" in m["content"].lower() for m in c["messages"] if m["role"] == "user")
    }
    page.fill("#search", "")

    # full (A) loses to current (B) by at least 0.7 on some turn, then only on turns after the switch
    page.select_option("#system-a", str(systems.index("full")))
    page.select_option("#system-b", str(systems.index("current")))
    page.fill("#delta", "0.7")

    def loses(qid):
        return rows["current"][qid]["ndcg_at_10"] - rows["full"][qid]["ndcg_at_10"] >= 0.7

    expected = [c for c in ids if any(loses(q) for q in turns[c])]
    assert set(_visible_ids(page)) == set(expected) and 0 < len(expected) < len(ids)
    page.check("#after-switch")
    assert set(_visible_ids(page)) == {c for c in ids if any(loses(q) and after[q] for q in turns[c])}
    page.uncheck("#after-switch")
    page.fill("#delta", "")

    def mostly_unjudged(qid, history):
        top = tops[history][qid]
        return sum(doc not in judged[qid] for doc, _ in top) / len(top) > 0.5

    page.check("#unjudged")
    assert set(_visible_ids(page)) == {
        c for c in ids if any(mostly_unjudged(q, "full") or mostly_unjudged(q, "current") for q in turns[c])
    }
    assert not errors
    page.close()


def test_conversation_page_shows_the_result_files(browser, small_site, small_results):
    listed = embedded(small_site / "index.html")
    histories = {s["name"]: s for s in listed["systems"]}
    by_name = {}
    for path in small_results.rglob("mtrbench-sample.json"):
        document = json.loads(path.read_text())
        for name, system in histories.items():
            same_model = system["model"] == document["mtrbench"]["model"]["name"]
            if same_model and system["history"] == document["mtrbench"]["settings"]["history"]:
                by_name[name] = path
    assert len(by_name) == len(histories) == 3
    names = [s["name"] for s in listed["systems"]]
    tiny = [s["model"].startswith("tiny-") for s in listed["systems"]].index(True)  # a local folder: tiny-<hash>
    rag = [s["generator"] for s in listed["systems"]].index("gen-m")
    for item in listed["conversations"]:
        path = small_site / "conversations" / item["file"]
        for width in WIDTHS:
            page, errors, requests = _open(browser, path, width)
            assert _no_overflow(page), (item["file"], width)
            assert not errors and all(url.startswith("file://") for url in requests)
            page.close()
        page, errors, _ = _open(browser, path, 1400)
        data = embedded(path)
        for turn, texts in zip(data["turns"], queries(data)):
            section = page.locator(f"#turn-{turn['turn']}")
            for n, name in enumerate(names):
                block = section.locator(f'.system[data-system="{n}"]')
                expected = per_query(by_name[name])[turn["qid"]]
                shown = block.locator("td.measure").evaluate_all(
                    "cells => cells.map(c => [c.dataset.key, c.dataset.value])"
                )
                assert {k: float(v) for k, v in shown} == {k: expected[k] for k in data["measures"]}
                docs = block.locator("table.topk tbody tr").evaluate_all("rows => rows.map(r => r.dataset.doc)")
                assert docs == [doc for doc, _ in run_top(by_name[name])[turn["qid"]]]
            struck = section.locator(f'.system[data-system="{tiny}"] .query del')
            assert struck.count() == (1 if texts[tiny]["cut_before"] else 0)
            if texts[tiny]["cut_before"]:
                assert struck.inner_text() == texts[tiny]["cut_before"]
                kept = section.locator(f'.system[data-system="{tiny}"] .query .kept').inner_text()
                assert kept == texts[tiny]["kept"]
            answer = section.locator(f'.system[data-system="{rag}"] .answer')
            assert turn["utterance"] in answer.locator(".answer-text").inner_text()
            cited = answer.locator("a.citation").evaluate_all("links => links.map(a => a.getAttribute('href'))")
            assert cited and all(page.locator(href).count() == 1 for href in cited)
            label = "correct" if verdict(turn["utterance"]) else "incorrect"
            assert answer.locator(".verdict").inner_text() == f"judge verdict: {label}"
        assert page.evaluate("window.pwned === undefined")
        if INJECTED_DOC in data["passages"]:
            row = page.locator(f'tr[data-doc="{INJECTED_DOC}"]').first
            assert INJECTION in row.inner_text()
        assert not errors
        page.close()
    assert any(
        INJECTED_DOC in embedded(small_site / "conversations" / i["file"])["passages"] for i in listed["conversations"]
    )


def test_six_systems_fit_a_phone(browser, sample_site):
    page, errors, _ = _open(browser, sample_site / "conversations" / "0001-geo-01.html", 390)
    assert _no_overflow(page) and not errors
    assert page.locator("section.turn").count() == 6
    page.close()
