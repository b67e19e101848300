"""The page's pivot tables hold the committed leaderboards' own numbers, worked out here from the JSON alone."""

from __future__ import annotations

import json
import statistics
from html.parser import HTMLParser

import pytest

from mtrbench.leaderboard.html import render_page
from mtrbench.leaderboard.metric_names import metric_name
from mtrbench.leaderboard.schema import leaderboards_dir

NAMES = ("sample", "reported")


class _Pivots(HTMLParser):
    """Every table.pivot: its groups, header keys and rows (label and cells with data-entry / data-sort)."""

    def __init__(self):
        super().__init__()
        self.tables: list[dict] = []
        self._row = self._cell = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and "pivot" in (a.get("class") or "").split():
            self.tables.append({"kind": a["data-kind"], "groups": a["data-groups"].split(), "keys": [], "rows": []})
        elif not self.tables or self.tables[-1].get("done"):
            return
        elif tag == "th":
            self.tables[-1]["keys"].append(a.get("data-key"))
        elif tag == "tr" and "data-row" in a:
            self._row = {"label": None, "cells": []}
            self.tables[-1]["rows"].append(self._row)
        elif tag == "td" and self._row is not None:
            self._cell = {
                "class": a.get("class", ""),
                "entry": a.get("data-entry"),
                "sort": a.get("data-sort"),
                "text": "",
            }
            self._row["cells"].append(self._cell)

    def handle_endtag(self, tag):
        if tag == "table" and self.tables and not self.tables[-1].get("done"):
            self.tables[-1]["done"] = True
            self._row = None
        elif tag == "td":
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell["text"] += data


@pytest.fixture(scope="module", params=NAMES)
def board(request):
    document = json.loads((leaderboards_dir() / f"{request.param}.json").read_text(encoding="utf-8"))
    parser = _Pivots()
    html = render_page(document)
    parser.feed(html)
    return document, parser.tables, html


def _groups(document):
    if document.get("groups"):
        return document["groups"]
    from mtrbench.leaderboard.build import group_entries  # reported.json is written by hand, without groups

    return group_entries(document["entries"])[0]


def test_every_entry_main_score_is_in_its_group_pivot_column(board):
    """Independently: for each group and entry, scores[main_scores[task]], and the rank the JSON gives it."""
    document, tables, _ = board
    by_id = {e["id"]: e for e in document["entries"]}
    expected = {
        (g["id"], i): (by_id[i]["scores"].get(g["main_scores"][by_id[i]["task"]]), g["ranks"][by_id[i]["task"]].get(i))
        for g in _groups(document)
        for i in g["entries"]
    }
    shown = {}
    for table in tables:
        for row in table["rows"]:
            cells = [c for c in row["cells"] if "bar" in c["class"] and "mean" not in c["class"]]
            if table["kind"] == "metrics":
                cells = cells[:1]  # the main score; the other columns are checked below
            for n, cell in enumerate(cells):
                if cell["entry"] is None:
                    continue
                group = table["groups"][n] if table["kind"] == "histories" else table["groups"][0]
                value = float(cell["sort"]) if cell["sort"] else None
                assert (group, cell["entry"]) not in shown
                shown[(group, cell["entry"])] = (value, None)
                if value is not None:
                    decimals = 4 if abs(value) <= 1 else 2
                    assert cell["text"] == f"{value:.{decimals}f}"
    assert {k: v[0] for k, v in shown.items()} == {k: v[0] for k, v in expected.items()}


def test_metric_columns_of_single_task_tables_hold_those_metrics(board):
    document, tables, _ = board
    by_id = {e["id"]: e for e in document["entries"]}
    checked = 0
    for table in (t for t in tables if t["kind"] == "metrics"):
        keys = table["keys"][2:]
        for row in table["rows"]:
            cells = [c for c in row["cells"] if "bar" in c["class"]]
            for key, cell in zip(keys, cells):
                value = by_id[cell["entry"]]["scores"].get(key)
                assert (float(cell["sort"]) if cell["sort"] else None) == value
                checked += 1
    assert checked or document["name"] == "sample"


def test_means_and_ranks_are_worked_out_from_the_cells(board):
    """Mean = arithmetic mean of the row's cells (every cell present); rank 1 = highest mean, ties share."""
    _, tables, _ = board
    for table in (t for t in tables if "mean" in t["keys"]):
        means = {}
        for n, row in enumerate(table["rows"]):
            values = [
                float(c["sort"]) if c["sort"] else None
                for c in row["cells"]
                if "bar" in c["class"] and "mean" not in c["class"]
            ]
            mean_cell = next(c for c in row["cells"] if "mean" in c["class"])
            if None in values:
                assert mean_cell["sort"] == ""
                continue
            assert float(mean_cell["sort"]) == pytest.approx(statistics.fmean(values), abs=1e-12)
            means[n] = statistics.fmean(values)
        ranks = [int(row["cells"][0]["text"]) for n, row in enumerate(table["rows"]) if n in means]
        expected = [1 + sum(other > means[n] + 1e-12 for other in means.values()) for n in means]
        assert ranks == expected


def test_row_labels_are_distinct_within_a_table_and_short(board):
    _, tables, _ = board
    for table in tables:
        labels = [next(c for c in row["cells"] if c["class"] == "entry")["text"] for row in table["rows"]]
        assert len(set(labels)) == len(labels), labels
        assert all(len(label) <= 64 for label in labels), labels


def test_no_raw_metric_key_reaches_the_reader(board):
    """Headers show human names; the raw keys live only in data attributes and the embedded JSON."""
    document, tables, html = board
    visible = html.split('<script type="application/json"')[0]
    import re

    text = re.sub(r"<[^>]+>", " ", visible)
    for key in {k for e in document["entries"] for k in e["scores"]}:
        assert key not in text.split(), key


@pytest.mark.parametrize(
    "key, name",
    [
        ("judge_score_academic", "Academic (judge 1-10)"),
        ("judge_score_average", "Average (judge 1-10)"),
        ("ndcg_at_10", "nDCG@10"),
        ("mrr", "MRR"),
        ("map", "MAP"),
        ("recall_at_1000", "Recall@1000"),
    ],
)
def test_metric_names(key, name):
    assert metric_name(key) == name
