"""The leaderboard's pivot tables: systems x tasks, systems x history strategies, or systems x metrics.

One table per comparable group, as a reader scans a benchmark's leaderboard:

* a group with several tasks: one column per task holding its main score, then the mean over the tasks
  (when every task has the same main metric and the system has them all), ranked by that mean;
* single-task groups that differ only in their history strategy (same label, truncation, query format,
  source table, task and dataset variant): ONE table, a column per strategy, each column holding the
  main score of that strategy's own comparable group (ranks stay within a column's group), then the mean;
* any other single-task group: the task's metrics as columns (main score first), ranked by the main score.

Rows are systems, labelled by the short model name plus only what tells same-model rows apart (the
paper's row label for reported numbers, else the settings that differ), so a label stays short.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mtrbench.leaderboard.build import competition_ranks
from mtrbench.leaderboard.keys import flatten, system_settings
from mtrbench.results.labels import canonical, short_model

TASKS, HISTORIES, METRICS = "tasks", "histories", "metrics"
# Metric columns of a single-task table after its main score, when its entries have them.
HEADLINE_METRICS = (
    "ndcg_at_10",
    "ndcg_at_20",
    "ndcg_at_5",
    "ndcg_at_3",
    "recall_at_5",
    "recall_at_10",
    "recall_at_20",
    "recall_at_100",
    "mrr_at_10",
    "mrr",
    "map",
    "hit_rate_at_5",
)
MAX_METRIC_COLUMNS = 8
MAX_SETTING_TEXT = 24


@dataclass(frozen=True)
class Column:
    key: str  # the task, the history strategy or the metric this column holds
    metric: str  # the metric of its cells
    group_id: str  # the comparable group its cells are ranked in
    task: str


@dataclass(frozen=True)
class Cell:
    value: float | None
    entry_id: str | None
    rank: int | None  # within the column's comparable group; None where the column is not ranked


@dataclass
class Row:
    key: str
    label: str  # short: model + what tells it apart within the table
    full_name: str  # the system's name as the leaderboard file has it
    cells: list[Cell]
    mean: float | None = None
    rank: int | None = None


@dataclass
class Pivot:
    kind: str  # TASKS | HISTORIES | METRICS
    groups: list[dict[str, Any]]  # the comparable group(s) shown, in column order for HISTORIES
    columns: list[Column]
    rows: list[Row] = field(default_factory=list)
    has_mean: bool = False

    @property
    def id(self) -> str:
        return "-".join(g["id"] for g in self.groups)

    @property
    def metrics(self) -> list[str]:
        return list(dict.fromkeys(c.metric for c in self.columns))


def _variant(group: dict[str, Any]) -> str:
    """What single-task groups must share to become one systems x history table."""
    comp = {k: v for k, v in group["comparability"].items() if k != "history"}
    return canonical([group["tasks"], comp])


def _row_key(entry: dict[str, Any]) -> str:
    """The system across history strategies: a paper's row label often names the strategy, so it is left out."""
    settings = {k: v for k, v in system_settings(entry).items() if k != "row"}
    return canonical([entry["model"], entry["model_revision"], settings])


def _history_rows(groups: list[dict[str, Any]], by_id: dict[str, dict[str, Any]]) -> dict[str, list[str]] | None:
    """row key -> entry id per group (None where missing); None when a group holds two entries of one row."""
    rows: dict[str, list[str | None]] = {}
    for n, group in enumerate(groups):
        for entry_id in group["entries"]:
            cells = rows.setdefault(_row_key(by_id[entry_id]), [None] * len(groups))
            if cells[n] is not None:
                return None
            cells[n] = entry_id
    return rows  # type: ignore[return-value]


def _setting_value(value: Any) -> str:
    text = str(value)
    return text if len(text) <= MAX_SETTING_TEXT else text[: MAX_SETTING_TEXT - 1].rstrip() + "\u2026"


def _paper_row(entry: dict[str, Any]) -> str:
    """A reported entry's row label without the model name it usually starts with."""
    row = str(entry["source"].get("row") or "")
    model = entry["model"]
    if row.startswith(model):
        row = row[len(model) :].strip(" |:-")
    return row


def short_labels(entries: dict[str, dict[str, Any]]) -> dict[str, str]:
    """row key -> ``model`` or ``model · what differs`` (the paper's row, else settings that differ)."""
    by_model: dict[str, list[str]] = {}
    for key, entry in entries.items():
        by_model.setdefault(short_model(entry["model"]), []).append(key)
    labels = {}
    for model, keys in by_model.items():
        if len(keys) == 1:
            labels[keys[0]] = model
            continue
        rows = {k: _paper_row(entries[k]) for k in keys}
        if all(rows.values()) and len(set(rows.values())) == len(keys):
            labels.update({k: f"{model} \u00b7 {rows[k]}" for k in keys})
            continue
        flat = {
            k: flatten(
                {
                    "revision": entries[k]["model_revision"],
                    **{s: v for s, v in system_settings(entries[k]).items() if s != "row"},
                }
            )
            for k in keys
        }
        differing = sorted(
            {name for k in keys for name, v in flat[k].items() if any(flat[o].get(name) != v for o in keys)}
        )
        for k in keys:
            detail = ", ".join(
                f"{name.rsplit('.', 1)[-1]}={_setting_value(flat[k].get(name))}"
                for name in differing
                if flat[k].get(name) is not None
            )
            labels[k] = f"{model} \u00b7 {detail}" if detail else model
    seen: dict[str, int] = {}
    for key in sorted(labels, key=list(entries).index):  # labels still equal: numbered, in file order
        label = labels[key]
        if sum(v == label for v in labels.values()) > 1 or label in seen:
            seen[label] = seen.get(label, 0) + 1
            labels[key] = f"{label} #{seen[label]}"
    return labels


def _metric_columns(group: dict[str, Any], task: str, by_id: dict[str, dict[str, Any]]) -> list[str]:
    main = group["main_scores"][task]
    present = {k for i in group["entries"] if by_id[i]["task"] == task for k in by_id[i]["scores"]}
    others = [k for k in HEADLINE_METRICS if k in present and k != main]
    if not others:  # a family outside the headline list (judge ratings): all of its keys
        others = sorted(k for k in present if k != main)
    return [main] + others[: MAX_METRIC_COLUMNS - 1]


def _finish(
    pivot: Pivot, members: dict[str, list[str | None]], by_id: dict[str, dict[str, Any]], full_names: dict[str, str]
) -> Pivot:
    """Cells, means, ranks and labels of a pivot whose columns and row members are known."""
    ranks = {(g["id"], t): r for g in pivot.groups for t, r in g["ranks"].items()}
    representative = {key: by_id[next(i for i in ids if i)] for key, ids in members.items()}
    labels = short_labels(representative)
    pivot.has_mean = pivot.kind != METRICS and len(pivot.columns) >= 2 and len(pivot.metrics) == 1
    for key, ids in members.items():
        cells = []
        for column, entry_id in zip(pivot.columns, ids):
            value = by_id[entry_id]["scores"].get(column.metric) if entry_id else None
            ranked = pivot.kind != METRICS or column is pivot.columns[0]
            rank = ranks.get((column.group_id, column.task), {}).get(entry_id) if ranked and entry_id else None
            cells.append(Cell(value, entry_id, rank))
        values = [c.value for c in cells]
        mean = sum(values) / len(values) if pivot.has_mean and None not in values else None  # type: ignore[arg-type]
        pivot.rows.append(Row(key, labels[key], full_names.get(key, labels[key]), cells, mean))
    ranked_by = {r.key: r.mean for r in pivot.rows if r.mean is not None} if pivot.has_mean else {}
    if not ranked_by:
        ranked_by = {r.key: r.cells[0].value for r in pivot.rows if r.cells[0].value is not None}
    row_ranks = competition_ranks(ranked_by)  # type: ignore[arg-type]
    for row in pivot.rows:
        row.rank = row_ranks.get(row.key)
    pivot.rows.sort(key=lambda r: (r.rank is None, r.rank or 0, r.label))
    return pivot


def _group_pivot(group: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> Pivot:
    systems = group["systems"]
    if len(group["tasks"]) >= 2:
        columns = [Column(t, group["main_scores"][t], group["id"], t) for t in group["tasks"]]
        members = {name: [s["entries"].get(t) for t in group["tasks"]] for name, s in systems.items()}
        pivot = Pivot(TASKS, [group], columns)
    else:
        task = group["tasks"][0]
        metrics = _metric_columns(group, task, by_id)
        columns = [Column(m, m, group["id"], task) for m in metrics]
        members = {name: [s["entries"].get(task)] * len(metrics) for name, s in systems.items()}
        pivot = Pivot(METRICS, [group], columns)
    return _finish(pivot, members, by_id, {name: name for name in systems})


def _history_pivot(groups: list[dict[str, Any]], by_id: dict[str, dict[str, Any]]) -> Pivot | None:
    rows = _history_rows(groups, by_id)
    if rows is None:
        return None
    task = groups[0]["tasks"][0]
    columns = [Column(str(g["comparability"]["history"]), g["main_scores"][task], g["id"], task) for g in groups]
    if len({c.key for c in columns}) != len(columns):
        return None
    names = {}
    for group in groups:
        for name, system in group["systems"].items():
            names.setdefault(_row_key(by_id[system["entries"][task]]), name)
    return _finish(Pivot(HISTORIES, list(groups), columns), rows, by_id, names)  # type: ignore[arg-type]


def pivots(groups: list[dict[str, Any]], entries: list[dict[str, Any]]) -> list[Pivot]:
    """The page's tables, in the order of the groups' first appearance."""
    by_id = {e["id"]: e for e in entries}
    variants: dict[str, list[dict[str, Any]]] = {}
    for group in groups:
        if len(group["tasks"]) == 1:
            variants.setdefault(_variant(group), []).append(group)
    tables: list[Pivot] = []
    done: set[str] = set()
    for group in groups:
        if group["id"] in done:
            continue
        siblings = variants.get(_variant(group), []) if len(group["tasks"]) == 1 else []
        merged = _history_pivot(siblings, by_id) if len(siblings) >= 2 else None
        if merged is not None:
            tables.append(merged)
            done.update(g["id"] for g in siblings)
        else:
            tables.append(_group_pivot(group, by_id))
            done.add(group["id"])
    return tables
