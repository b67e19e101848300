"""The explorer's layout in headless Chromium, on pages built here from hand-made data (no eval needed): the
conversations table fits 1,400 px with nine systems, the first click on B - A puts A's largest losses first,
and a long query's box shows the turn's question."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
from browser import CHROMIUM, browser_or_skip

from mtrbench.explore.site import page_html

HISTORIES = (
    "current",
    "full",
    "last-response",
    "questions",
    "rewrite",
    "window:5",
    "window:3",
    "summary:llm",
    "rewrite",
)
SYSTEMS = [
    {
        "name": f"Snowflake/snowflake-arctic-embed-m-v2.0 ({h}{'-' + str(i) if i == 8 else ''})",
        "model": "Snowflake/snowflake-arctic-embed-m-v2.0",
        "history": h,
        "truncate": "left",
        "main": "ndcg_at_10",
        "generator": None,
    }
    for i, h in enumerate(HISTORIES)
]
CONVERSATIONS = 7
TURNS = 5


def score(c: int, t: int, s: int) -> float:
    return round(((c * 7 + t * 3 + s * 5) % 11) / 10, 4)


def list_data() -> dict:
    conversations = [
        {
            "id": f"conversation-{c}",
            "file": f"{c:04d}-conversation-{c}.html",
            "switch": 3,
            "text": "a question",
            "turns": [
                {"t": t, "after": t >= 3, "s": [score(c, t, s) for s in range(len(SYSTEMS))], "u": [0.0] * len(SYSTEMS)}
                for t in range(1, TURNS + 1)
            ],
        }
        for c in range(CONVERSATIONS)
    ]
    return {
        "kind": "list",
        "task": "hand-made",
        "split": "test",
        "measure": "ndcg_at_10",
        "measure_label": "nDCG@10",
        "top_k": 10,
        "mostly_unjudged": 0.5,
        "systems": SYSTEMS,
        "conversations": conversations,
    }


QUESTION = "And how well did calintrazole do in its clinical trials?"
HISTORY = "\n".join(
    f"User: an older question number {n} about the Tamsin Relay Protocol and its ttl" for n in range(60)
)


def conversation_data() -> dict:
    """One turn, two systems: a history-first query (question last) and a current-first one (question first),
    both far longer than their box, the first with its oldest part cut by truncation."""
    cut = HISTORY[:400]
    queries = [
        {"base": 0, "add": f"{HISTORY}\nUser: {QUESTION}", "cut": [len(cut), 0]},
        {"base": 0, "add": f"User: {QUESTION}\n{HISTORY}"},
    ]
    systems = [{"query": q, "scores": {"ndcg_at_10": 0.5}, "top": [["doc-1", 1.5]]} for q in queries]
    return {
        "kind": "conversation",
        "task": "hand-made",
        "conversation": "conversation-0",
        "switch_turn": None,
        "measure": "ndcg_at_10",
        "measures": ["ndcg_at_10"],
        "labels": {"ndcg_at_10": "nDCG@10"},
        "top_k": 1,
        "systems": SYSTEMS[:2],
        "passages": {"doc-1": ["A title", "a passage"]},
        "turns": [
            {
                "turn": 4,
                "qid": "conversation-0_4",
                "after_switch": False,
                "utterance": QUESTION,
                "grades": {},
                "systems": systems,
            }
        ],
        "previous": None,
        "next": None,
    }


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("explore-layout")
    (out / "assets").mkdir()
    (out / "conversations").mkdir()
    for name in ("explore.css", "explore.js"):
        text = resources.files("mtrbench.explore").joinpath(name).read_text(encoding="utf-8")
        (out / "assets" / name).write_text(text, encoding="utf-8")
    (out / "index.html").write_text(page_html("list", list_data(), "assets"), encoding="utf-8")
    page = out / "conversations" / "0000-conversation-0.html"
    page.write_text(page_html("conversation", conversation_data(), "../assets"), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    sync_playwright = browser_or_skip()
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            yield instance
        finally:
            instance.close()


def _open(browser, path: Path, width: int):
    page = browser.new_page(viewport={"width": width, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.resolve().as_uri())
    page.wait_for_load_state("load")
    return page, errors


def _visible_ids(page) -> list[str]:
    return page.eval_on_selector_all("#conversations tbody tr", "rows => rows.map(r => r.dataset.id)")


def test_nine_systems_fit_1400_px(browser, site):
    page, errors = _open(browser, site / "index.html", 1400)
    width, box, inner, page_width = page.evaluate(
        """[document.querySelector('#conversations').getBoundingClientRect().width,
            document.querySelector('.scroll').scrollWidth, document.querySelector('.scroll').clientWidth,
            document.documentElement.scrollWidth]"""
    )
    assert not errors
    assert width <= 1400 and box <= inner and page_width <= 1400, (width, box, inner, page_width)
    # every header whole within its column: none reaches into its neighbour
    overflowing = page.eval_on_selector_all(
        "#conversations th", "ths => ths.filter(t => t.scrollWidth > t.clientWidth).length"
    )
    assert overflowing == 0
    page.close()
    page, errors = _open(browser, site / "index.html", 390)  # a phone: the table scrolls inside its box
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    page.close()


def test_first_click_on_b_minus_a_puts_a_largest_losses_first(browser, site):
    page, errors = _open(browser, site / "index.html", 1400)
    a, b = 0, 1  # the page's default choice of A and B
    ids = [f"conversation-{c}" for c in range(CONVERSATIONS)]
    diff = {
        f"conversation-{c}": sum(score(c, t, b) - score(c, t, a) for t in range(1, TURNS + 1)) / TURNS
        for c in range(CONVERSATIONS)
    }
    assert len({round(v, 9) for v in diff.values()}) > 2  # the order is not decided by ties alone
    page.click('th[data-key="diff"]')
    assert _visible_ids(page) == sorted(ids, key=lambda c: (-diff[c], ids.index(c)))
    assert page.get_attribute('th[data-key="diff"]', "aria-sort") == "descending"
    page.click('th[data-key="diff"]')
    assert _visible_ids(page) == sorted(ids, key=lambda c: (diff[c], ids.index(c)))
    # a mean's first click, as before: the lowest first
    means = {
        f"conversation-{c}": sum(score(c, t, 2) for t in range(1, TURNS + 1)) / TURNS for c in range(CONVERSATIONS)
    }
    page.click('th[data-key="mean2"]')
    assert _visible_ids(page) == sorted(ids, key=lambda c: (means[c], ids.index(c)))
    assert not errors
    page.close()


def test_long_query_box_shows_the_turn_question(browser, site):
    for width in (1400, 390):
        page, errors = _open(browser, site / "conversations" / "0000-conversation-0.html", width)
        boxes = page.evaluate(
            """Array.from(document.querySelectorAll('.query')).map(box => {
                 const q = box.querySelector('.current'), b = box.getBoundingClientRect();
                 const r = q ? q.getBoundingClientRect() : null;
                 return {text: q ? q.textContent : null, overflows: box.scrollHeight > box.clientHeight,
                         visible: !!r && r.top >= b.top - 0.5 && r.bottom <= b.bottom + 0.5};
               })"""
        )
        assert not errors and len(boxes) == 2
        for box in boxes:
            assert box == {"text": QUESTION, "overflows": True, "visible": True}, (width, box)
        page.close()
