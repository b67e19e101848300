"""`leaderboard show` at 80 columns: no metric name, task name or setting is broken inside a word."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from mtrbench.leaderboard.build import group_entries
from mtrbench.leaderboard.render import render

METRICS = {
    "ndcg_at_10": "nDCG@10",
    "recall_at_5": "Recall@5",
    "recall_at_10": "Recall@10",
    "recall_at_100": "Recall@100",
}
SETTINGS = {  # model -> the settings words its row shows
    "org/all-MiniLM-L6-v2": ["max_length=256", "dtype=fp32", "kind=dense"],
    "bm25": ["max_length=512", "dtype=fp16", "kind=sparse"],
}
TASKS = ("chatrag-doc2dial", "chatrag-topiocqa", "mtr-bench-8turn", "mtrbench-sample")


def entry(model: str, task: str, score: float, max_length: int, dtype: str, kind: str) -> dict:
    return {
        "id": f"{model}__{task}",
        "label": "run",
        "model": model,
        "model_revision": "r1",
        "task": task,
        "split": "test",
        "dataset_revision": "d1",
        "main_score": "ndcg_at_10",
        "scores": {key: score + i / 100 for i, key in enumerate(METRICS)},
        "settings": {
            "history": "full",
            "truncate": "left",
            "max_length": max_length,
            "retriever": {"kind": kind, "dtype": dtype},
        },
        "harness": {"name": "mtrbench", "version": "0.1.0"},
        "date": "2026-01-01T00:00:00Z",
        "hardware": None,
        "wall_time_s": 1.0,
        "command": None,
        "source": {"result_file": f"results/{model}/{task}.json"},
    }


@pytest.fixture
def document() -> dict:
    entries = [
        entry(
            model,
            task,
            0.5 + m / 10 + t / 100,
            *(int(w.split("=")[1]) if i == 0 else w.split("=")[1] for i, w in enumerate(words)),
        )
        for m, (model, words) in enumerate(SETTINGS.items())
        for t, task in enumerate(TASKS)
    ]
    groups, separations = group_entries(entries)
    return {
        "name": "hand",
        "description": "hand-made",
        "entries": entries,
        "groups": groups,
        "separations": separations,
    }


def shown(document: dict, task: str | None = None, width: int = 80) -> str:
    out = io.StringIO()
    render(document, Console(file=out, width=width, force_terminal=False, color_system=None), task=task)
    return out.getvalue()


def words(text: str) -> set[str]:
    return set(text.split())


def test_single_task_table_keeps_metric_names_and_settings_whole_at_80_columns(document):
    text = shown(document, task="mtrbench-sample")
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 80
    assert {*METRICS.values(), "nDCG@10*"} - {"nDCG@10"} <= words(text)  # the main score carries its star
    for settings in SETTINGS.values():
        assert set(settings) <= words(text), settings
    assert "all-MiniLM-L6-v2" in words(text)
    # every row's settings on one line with its model (under the table: they do not fit beside four metrics)
    assert re.search(r"all-MiniLM-L6-v2:? .*max_length=256 dtype=fp32 kind=dense", text)
    assert re.search(r"bm25:? .*max_length=512 dtype=fp16 kind=sparse", text)


def test_settings_stay_a_column_where_the_console_is_wide_enough(document):
    text = shown(document, task="mtrbench-sample", width=140)
    header = next(line for line in text.splitlines() if "Recall@100" in line)
    assert header.split()[-1] == "settings"
    row = next(line for line in text.splitlines() if "all-MiniLM-L6-v2" in line)
    assert row.split()[-3:] == SETTINGS["org/all-MiniLM-L6-v2"]


def test_group_table_breaks_task_and_model_names_only_where_their_parts_join(document):
    text = shown(document)
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 80
    pieces = words(text)
    allowed = set()
    for name in (*TASKS, "all-MiniLM-L6-v2"):  # whole, or parts split after '-'
        parts = re.split(r"(?<=-)", name)
        allowed |= {"".join(parts[i:j]) for i in range(len(parts)) for j in range(i + 1, len(parts) + 1)}
    for piece in pieces:
        if any(ch.isalpha() for ch in piece) and any(piece in name for name in (*TASKS, "all-MiniLM-L6-v2")):
            assert piece in allowed, piece
    for settings in SETTINGS.values():
        assert set(settings) <= pieces, settings


def test_reported_rad_bench_table_fits_80_columns_with_every_word_whole():
    """RAD-Bench Table 2 (rank, model, average and six categories) fit no layout with the usual 3-column gap and
    came out 85 columns wide; the narrower gap fits it within 80, headers, names and ratings whole."""
    import json

    from mtrbench.leaderboard.schema import leaderboards_dir

    document = json.loads((leaderboards_dir() / "reported.json").read_text())
    text = shown(document, task="rad-bench")
    assert max(len(line) for line in text.splitlines()) <= 80, text
    assert "\u2026" not in text
    header = next(line for line in text.splitlines() if "Average*" in line)
    assert header.split() == "# model Average* Academic Customer Education Finance News Travel".split()
    # the table itself (from its header on): the leaderboard's description above it is prose
    table = text[text.index(header) :]
    pieces = words(table)
    entries = [e for e in document["entries"] if e["task"] == "rad-bench"]
    for entry in entries:
        for value in entry["scores"].values():
            assert f"{value:.2f}" in pieces, entry["id"]
    models = [e["model"] for e in entries]
    allowed = set()  # a model name whole, or broken after its '-' only
    for name in models:
        parts = re.split(r"(?<=-)", name)
        allowed |= {"".join(parts[i:j]) for i in range(len(parts)) for j in range(i + 1, len(parts) + 1)}
    for piece in pieces:
        if any(ch.isalpha() for ch in piece) and any(piece in name for name in models):
            assert piece in allowed, piece
