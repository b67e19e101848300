"""The page marks a system best (green) only where it is ranked 1 alone: not in a tie group ``1-2``, not when two
plain ranks share ``1``."""

from __future__ import annotations

import re

from mtrbench.leaderboard.build import group_entries
from mtrbench.leaderboard.html import pivot_table, task_table
from mtrbench.leaderboard.pivot import METRICS, TASKS, pivots
from mtrbench.leaderboard.ties import RankGroups, alone_first


def entry(model: str, task: str, ndcg: float) -> dict:
    return {
        "id": f"{model}__{task}",
        "label": "run",
        "model": model,
        "model_revision": "r1",
        "task": task,
        "split": "test",
        "dataset_revision": "d1",
        "main_score": "ndcg_at_10",
        "scores": {"ndcg_at_10": ndcg, "recall_at_10": ndcg + 0.1},
        "settings": {"history": "full", "truncate": "left", "retriever": {"kind": "dense"}},
        "harness": {"name": "mtrbench", "version": "0.1.0"},
        "date": "2026-01-01T00:00:00Z",
        "hardware": None,
        "wall_time_s": 1.0,
        "command": None,
        "source": {"result_file": f"results/{model}/{task}.json"},
    }


def board(scores: dict[str, dict[str, float]]) -> tuple[list[dict], list[dict]]:
    """(groups, entries) of model -> task -> nDCG@10."""
    entries = [entry(model, task, value) for model, tasks in scores.items() for task, value in tasks.items()]
    return group_entries(entries)[0], entries


def tie_aware(labels: dict[str, str]) -> RankGroups:
    return RankGroups(labels, {k: int(v.split("-")[0]) for k, v in labels.items()}, True, "tied ranks")


def marked(html: str, css: str) -> list[str]:
    """The entry ids (cells) or row keys whose cell has class ``css``."""
    rows = re.findall(r'<tr data-(?:row|entry-id)="([^"]+)"[^>]*>(.*?)</tr>', html)
    found = []
    for key, cells in rows:
        for cell in re.findall(r"<td ([^>]*)>", cells):
            if css in re.search(r'class="([^"]*)"', cell).group(1).split():
                entry_id = re.search(r'data-entry="([^"]+)"', cell)
                found.append(entry_id.group(1) if entry_id else key)
    return found


def test_alone_first_is_the_one_system_ranked_1_alone():
    assert alone_first({"a": "1", "b": "2-3", "c": "2-3"}) == "a"
    assert alone_first({"a": "1-2", "b": "1-2", "c": "3"}) is None
    assert alone_first({"a": "1", "b": "1", "c": "3"}) is None  # plain ranks of two equal top scores
    assert alone_first({"a": "2"}) is None


def test_single_task_pivot_marks_no_best_when_the_top_is_a_tie_group():
    groups, entries = board({"A": {"t": 0.61}, "B": {"t": 0.60}, "C": {"t": 0.30}})
    (pivot,) = pivots(groups, entries)
    assert pivot.kind == METRICS
    key = (groups[0]["id"], "t")
    tied = {key: tie_aware({"A__t": "1-2", "B__t": "1-2", "C__t": "3"})}
    html = pivot_table(pivot, tied)
    assert marked(html, "best") == [] and marked(html, "rank-1") == []
    assert re.findall(r'<td class="num rank[^"]*"[^>]*>([^<]+)<', html) == ["1-2", "1-2", "3"]
    alone = {key: tie_aware({"A__t": "1", "B__t": "2-3", "C__t": "2-3"})}
    html = pivot_table(pivot, alone)
    assert marked(html, "best") == ["A__t"]  # the main score's cell only: the other metrics are not ranked
    assert len(marked(html, "rank-1")) == 1
    # plain ranks (no per-query scores): A's higher score is 1 alone
    assert marked(pivot_table(pivot), "best") == ["A__t"]


def test_systems_x_tasks_pivot_marks_each_column_by_its_own_tie_groups():
    groups, entries = board({"A": {"t1": 0.61, "t2": 0.2}, "B": {"t1": 0.60, "t2": 0.5}, "C": {"t1": 0.3, "t2": 0.1}})
    (pivot,) = pivots(groups, entries)
    assert pivot.kind == TASKS
    gid = groups[0]["id"]
    ranked = {
        (gid, "t1"): tie_aware({"A__t1": "1-2", "B__t1": "1-2", "C__t1": "3"}),
        (gid, "t2"): tie_aware({"B__t2": "1", "A__t2": "2-3", "C__t2": "2-3"}),
    }
    assert sorted(marked(pivot_table(pivot, ranked), "best")) == ["B__t2"]
    assert sorted(marked(pivot_table(pivot), "best")) == ["A__t1", "B__t2"]  # plain: each column's top


def test_equal_top_scores_with_plain_ranks_mark_no_best():
    groups, entries = board({"A": {"t": 0.5}, "B": {"t": 0.5}, "C": {"t": 0.3}})
    (pivot,) = pivots(groups, entries)
    html = pivot_table(pivot)
    assert marked(html, "best") == [] and marked(html, "rank-1") == []


def test_detail_table_marks_rank_1_only_when_alone():
    groups, entries = board({"A": {"t": 0.61}, "B": {"t": 0.60}, "C": {"t": 0.30}})
    by_id = {e["id"]: e for e in entries}
    names = {i: i.split("__")[0] for i in by_id}
    tied = tie_aware({"A__t": "1-2", "B__t": "1-2", "C__t": "3"})
    assert marked(task_table(groups[0], "t", by_id, names, tied), "rank-1") == []
    alone = tie_aware({"A__t": "1", "B__t": "2-3", "C__t": "2-3"})
    assert marked(task_table(groups[0], "t", by_id, names, alone), "rank-1") == ["A__t"]
