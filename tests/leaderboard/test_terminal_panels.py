"""`leaderboard show` of a table too wide for 80 columns: its score columns in panels one under the other, each
repeating rank and model, every line within 80 columns and every number whole (checked against scores and
ranks worked out here, not by the renderer)."""

from __future__ import annotations

import io
import re

from rich.console import Console

from mtrbench.leaderboard.build import group_entries
from mtrbench.leaderboard.render import render

MODELS = ("model-a", "model-b", "model-c", "model-d", "model-e")
TASKS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india")  # 9 + average > 80


def score(m: int, t: int) -> float:
    return 0.5 + ((m * 7 + t * 3) % 5) / 10 + t / 1000  # distinct within each task, the order differs by task


def entry(m: int, t: int) -> dict[str, object]:
    model, task = MODELS[m], TASKS[t]
    return {
        "id": f"{model}__{task}",
        "label": "run",
        "model": model,
        "model_revision": "r1",
        "task": task,
        "split": "test",
        "dataset_revision": "d1",
        "main_score": "ndcg_at_10",
        "scores": {"ndcg_at_10": score(m, t)},
        "settings": {"history": "full", "truncate": "left", "retriever": {"kind": "dense"}},
        "harness": {"name": "mtrbench", "version": "0.1.0"},
        "date": "2026-01-01T00:00:00Z",
        "hardware": None,
        "wall_time_s": 1.0,
        "command": None,
        "source": {"result_file": f"results/{model}/{task}.json"},
    }


def test_a_table_too_wide_for_80_columns_is_drawn_in_panels_that_each_repeat_rank_and_model() -> None:
    entries = [entry(m, t) for m in range(len(MODELS)) for t in range(len(TASKS))]
    groups, separations = group_entries(entries)
    assert len(groups) == 1
    document = {"name": "wide", "description": "", "entries": entries, "groups": groups, "separations": separations}
    out = io.StringIO()
    render(document, Console(file=out, width=80, force_terminal=False, color_system=None))
    text = out.getvalue()
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    assert "\u2026" not in text

    # What each row must show, worked out here: per task the score and its rank among the five, then the mean.
    expected = {}
    for m, model in enumerate(MODELS):
        cells = []
        for t in range(len(TASKS)):
            rank = 1 + sum(score(o, t) > score(m, t) for o in range(len(MODELS)))
            cells.append(f"{score(m, t):.4f} ({rank})")
        cells.append(f"{sum(score(m, t) for t in range(len(TASKS))) / len(TASKS):.4f}")
        expected[model] = cells
    averages = {model: float(cells[-1]) for model, cells in expected.items()}
    plain_rank = {model: 1 + sum(a > averages[model] for a in averages.values()) for model in MODELS}

    # Panels: each a header rule then one row per model, rank first; a model's cells across them, in order.
    rules = [n for n, line in enumerate(lines) if line.strip() and set(line.strip()) == {"\u2500"}]
    assert len(rules) >= 2, text
    row = re.compile(r"^\s*(\d+)\s+(model-[a-e])\s+(.*)$")
    cell = re.compile(r"\d\.\d{4}(?: \(\d+\))?")
    shown: dict[str, list[str]] = {model: [] for model in MODELS}
    for rule in rules:
        seen = []
        for line in lines[rule + 1 : rule + 1 + len(MODELS)]:
            match = row.match(line)
            assert match, (line, text)
            label, model, rest = match.groups()
            assert int(label) == plain_rank[model]
            shown[model] += cell.findall(rest)
            seen.append(model)
        assert sorted(seen) == sorted(MODELS)  # rank and model repeated in every panel
        header = " ".join(lines[max(0, rule - 3) : rule])
        assert any(task in header.split() for task in TASKS)
    assert shown == expected
    # every task named once, in exactly one panel's header
    headers = [word for rule in rules for line in lines[rule - 2 : rule] for word in line.split()]
    assert sorted(w for w in headers if w in TASKS) == sorted(TASKS)
