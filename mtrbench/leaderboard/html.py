"""A static leaderboard page: one self-contained index.html (inline CSS, JS and SVG; nothing fetched).

Read as people read a benchmark's leaderboard: per comparable group ONE pivot table (pivot.py: systems x
tasks, systems x history strategies, or systems x metrics for a single task) with the main score per
cell, a mean column and ranks; a header click sorts (again to reverse). Where the entries come from and
how they were run is said once per table; every entry's metrics, settings, command and source, and the
bar and per-turn charts, are one click away in the table's detail. Row labels are the model plus only
what tells rows apart. Missing values show as an em dash. Tables scroll inside their own box and charts
scale, so the page fits a 390 px wide phone. The leaderboard JSON is embedded for scripts.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

from mtrbench import __version__
from mtrbench.analyses.compare_many import SystemScores
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.numeric import json_text
from mtrbench.leaderboard.build import REASON_NAMES
from mtrbench.leaderboard.charts import Series, bar_chart, colours, number, turn_chart
from mtrbench.leaderboard.keys import flatten
from mtrbench.leaderboard.metric_names import metric_name, scale_note
from mtrbench.leaderboard.pivot import HISTORIES, METRICS, TASKS, Pivot, pivots
from mtrbench.leaderboard.render import groups_of
from mtrbench.leaderboard.ties import GroupRanks, RankGroups, alone_first, group_rank_groups
from mtrbench.leaderboard.turns import TurnCurves

# Metric columns after the main score, when some entry of the table has them.
PREFERRED_METRICS = (
    "ndcg_at_10",
    "ndcg_at_20",
    "ndcg_at_5",
    "recall_at_5",
    "recall_at_10",
    "recall_at_20",
    "recall_at_100",
    "mrr_at_10",
    "mrr",
    "hit_rate_at_5",
)
MAX_METRIC_COLUMNS = 8
DASH = "\u2014"


def clipped(text: str, limit: int = 32) -> str:
    """Long free text (a paper's description of its setting) cut short; the group heading has it whole."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"


def _sort_value(value: float | None) -> str:
    return "" if value is None else repr(value)


def _cell(text: str, sort: Any = None, css: str = "") -> str:
    sort_attr = "" if sort is None else f' data-sort="{escape(str(sort))}"'
    class_attr = f' class="{css}"' if css else ""
    return f"<td{class_attr}{sort_attr}>{text}</td>"


def _header(label: str, numeric: bool = False, key: str = "", css: str = "") -> str:
    attrs = ' data-type="number"' if numeric else ' data-type="text"'
    classes = " ".join(c for c in ("num" if numeric else "", css) if c)
    if classes:
        attrs += f' class="{classes}"'
    if key:
        attrs += f' data-key="{escape(key)}"'
    return f"<th{attrs}>{escape(label)}</th>"


def metric_columns(entries: list[dict[str, Any]], main: str) -> list[str]:
    """The main score first, then the headline metrics these entries have (their own, not the page's)."""
    present = {k for e in entries for k in e["scores"]}
    others = [k for k in PREFERRED_METRICS if k in present and k != main]
    if not others:  # a metric family outside the headline list (judge ratings): its own keys
        others = sorted(k for k in present if k != main)
    return [main] + others[:MAX_METRIC_COLUMNS]


def _setting_text(value: Any) -> str:
    if isinstance(value, str):
        return repr(value) if value != value.strip() or "\n" in value or value == "" else value
    return str(value)


def _details(entry: dict[str, Any]) -> str:
    """Every setting as a key/value list (not raw JSON), then how the number was made and where it is from."""
    rows = [(k, _setting_text(v)) for k, v in flatten(entry["settings"]).items() if v is not None]
    rows += [
        (k, str(entry[k]))
        for k in ("model", "model_revision", "split", "dataset_revision", "date", "wall_time_s")
        if entry.get(k) is not None
    ]
    if entry.get("hardware"):
        rows.append(("hardware", ", ".join(f"{k} {v}" for k, v in entry["hardware"].items() if v is not None)))
    rows += [(f"source.{k}", str(v)) for k, v in (entry.get("source") or {}).items() if v is not None]
    body = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows)
    command = f'<p class="command"><code>{escape(entry["command"])}</code></p>' if entry.get("command") else ""
    return f"<details><summary>settings</summary><dl>{body}</dl>{command}</details>"


def _ordered(ids: list[str], by_id: dict[str, dict[str, Any]], metric: str) -> list[str]:
    """Best main score first; entries without it last (in their original order)."""
    return sorted(ids, key=lambda i: (by_id[i]["scores"].get(metric) is None, -(by_id[i]["scores"].get(metric) or 0)))


def task_table(
    group: dict[str, Any],
    task: str,
    by_id: dict[str, dict[str, Any]],
    names: dict[str, str],
    ranked: RankGroups | None = None,
) -> str:
    """Every entry of one task in one group: rank (its tie group where ``ranked`` has one), label, the main
    score and headline metrics, settings."""
    main = group["main_scores"][task]
    ids = _ordered([i for i in group["entries"] if by_id[i]["task"] == task], by_id, main)
    metrics = metric_columns([by_id[i] for i in ids], main)
    head = (
        [_header("#", True), _header("entry")]
        + [_header(metric_name(m), True, m, "main" if m == main else "") for m in metrics]
        + [_header("details")]
    )
    tie_aware = ranked is not None and ranked.tie_aware
    ranks = ranked.first if ranked is not None and tie_aware else group["ranks"].get(task, {})
    labels = ranked.labels if ranked is not None and tie_aware else {}
    best = alone_first({i: labels.get(i, str(ranks[i])) for i in ids if ranks.get(i) is not None})
    rows = []
    for entry_id in ids:
        entry = by_id[entry_id]
        rank = ranks.get(entry_id)
        cells = [
            _cell(
                DASH if rank is None else labels.get(entry_id, str(rank)),
                "" if rank is None else rank,
                "num" + (" rank-1" if entry_id == best else ""),
            ),
            _cell(f'<span class="name">{escape(names[entry_id])}</span>', names[entry_id], "entry"),
        ]
        for metric in metrics:
            value = entry["scores"].get(metric)
            cells.append(_cell(number(value), _sort_value(value), "num" + (" main" if metric == main else "")))
        cells.append(_cell(_details(entry)))
        rows.append(
            f'<tr data-entry-id="{escape(entry_id)}" data-main="{_sort_value(entry["scores"].get(main))}">'
            + "".join(cells)
            + "</tr>"
        )
    return (
        f'<div class="scroll"><table class="sortable board" data-group="{escape(group["id"])}" '
        f'data-task="{escape(task)}" data-main="{escape(main)}"><thead><tr>{"".join(head)}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _bar_width(value: float | None, top: float) -> str:
    """The cell's data bar (a CSS variable), as a share of the column's scale."""
    if value is None or top <= 0:
        return ""
    return f' style="--bar:{max(0.0, min(100.0, 100 * value / top)):.1f}%"'


def column_title(pivot: Pivot, n: int) -> tuple[str, str]:
    """(header text, its tooltip) of a pivot's n-th column."""
    column = pivot.columns[n]
    if pivot.kind == METRICS:
        return metric_name(column.metric, short=True), metric_name(column.metric)
    if pivot.kind == HISTORIES:
        return clipped(column.key, 28), f"history={column.key}: {metric_name(column.metric)}"
    return clipped(column.key, 24), f"{column.key}: {metric_name(column.metric)}"


def _tie_label(pivot: Pivot, n: int, entry_id: str | None, ranked: GroupRanks) -> str | None:
    """The tie-aware rank of the entry in column ``n`` (None where that column's ranks are plain)."""
    column = pivot.columns[n]
    groups = ranked.get((column.group_id, column.task))
    if entry_id is None or groups is None or not groups.tie_aware:
        return None
    return groups.labels.get(entry_id)


def _column_best(pivot: Pivot, n: int, ranked: GroupRanks) -> str | None:
    """The entry of column ``n`` ranked 1 alone (tie-aware where the column's ranks are), else None."""
    column = pivot.columns[n]
    cells = [row.cells[n] for row in pivot.rows]
    if all(c.rank is None for c in cells):  # a metrics table ranks its main score only
        return None
    groups = ranked.get((column.group_id, column.task))
    if groups is not None and groups.tie_aware:
        return alone_first(groups.labels)
    return alone_first({c.entry_id: str(c.rank) for c in cells if c.entry_id and c.rank is not None})


def pivot_table(pivot: Pivot, ranked: GroupRanks | None = None, explorers: Mapping[str, str] | None = None) -> str:
    """The systems x columns table: rank, label, a main score per cell (best in its column marked: ranked 1 alone), mean.
    A single-task table's row rank and every cell's rank title are tie-aware where ``ranked`` says so; its rows
    link to the task's explorer where ``explorers`` (task -> relative link) has one."""
    ranked = ranked or {}
    task = pivot.columns[0].task if pivot.kind != TASKS else None
    explorer = (explorers or {}).get(task or "")
    link = (
        f' <a class="explore" href="{escape(explorer)}" title="turn by turn: mtrbench explore">explore</a>'
        if explorer
        else ""
    )
    scales = {c.metric: max([1.0] + [r.cells[n].value or 0.0 for r in pivot.rows]) for n, c in enumerate(pivot.columns)}
    head = [_header("#", True, css="rank"), _header("system")]
    for n, column in enumerate(pivot.columns):
        text, tip = column_title(pivot, n)
        head.append(
            _header(text, True, column.key, "main" if n == 0 and pivot.kind == METRICS else "").replace(
                "<th ", f'<th title="{escape(tip)}" ', 1
            )
        )
    if pivot.has_mean:
        head.append(_header("Mean", True, "mean", "mean"))
    row_labels = {
        row.key: (_tie_label(pivot, 0, row.cells[0].entry_id, ranked) if pivot.kind == METRICS else None)
        or str(row.rank)
        for row in pivot.rows
        if row.rank is not None
    }
    best_row = alone_first(row_labels)
    best_cells = [_column_best(pivot, n, ranked) for n in range(len(pivot.columns))]
    rows = []
    for row in pivot.rows:
        cells = [
            _cell(
                DASH if row.rank is None else row_labels[row.key],
                "" if row.rank is None else row.rank,
                "num rank" + (" rank-1" if row.key == best_row else ""),
            ),
            f'<td class="entry" data-sort="{escape(row.label)}" title="{escape(row.full_name)}">'
            f"{escape(row.label)}{link}</td>",
        ]
        for n, cell in enumerate(row.cells):
            css = (
                "num bar"
                + (" best" if cell.entry_id is not None and cell.entry_id == best_cells[n] else "")
                + (" main" if n == 0 and pivot.kind == METRICS else "")
            )
            entry = f' data-entry="{escape(cell.entry_id)}"' if cell.entry_id else ""
            label = _tie_label(pivot, n, cell.entry_id, ranked) or cell.rank
            rank = f' title="rank {label} in its group"' if cell.rank is not None else ""
            cells.append(
                f'<td class="{css}" data-sort="{_sort_value(cell.value)}"{entry}{rank}'
                f"{_bar_width(cell.value, scales[pivot.columns[n].metric])}>{number(cell.value)}</td>"
            )
        if pivot.has_mean:
            cells.append(
                f'<td class="num bar mean" data-sort="{_sort_value(row.mean)}"'
                f"{_bar_width(row.mean, scales[pivot.columns[0].metric])}>{number(row.mean)}</td>"
            )
        rows.append(f'<tr data-row="{escape(row.key)}">' + "".join(cells) + "</tr>")
    return (
        f'<div class="scroll"><table class="sortable pivot" data-kind="{pivot.kind}" '
        f'data-groups="{escape(" ".join(g["id"] for g in pivot.groups))}"><thead><tr>{"".join(head)}</tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _source(group: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> str:
    """Short: the paper's short name and table (``MTR-SUITE, Table 3``); the provenance line has it whole."""
    comp = group["comparability"]
    if comp["label"] == "run":
        return "mtrbench runs"
    source = by_id[group["entries"][0]]["source"]
    citation = str(source.get("citation") or comp.get("reported_in") or comp["label"]).split(" (")[0]
    return clipped(", ".join(str(p) for p in (citation, source.get("table")) if p), 60)


def pivot_title(pivot: Pivot, by_id: dict[str, dict[str, Any]]) -> str:
    group = pivot.groups[0]
    source = _source(group, by_id)
    if pivot.kind == TASKS:
        return f"{source}: {len(group['tasks'])} tasks"
    if pivot.kind == HISTORIES:
        return f"{source}: {group['tasks'][0]} by history strategy"
    return f"{source}: {group['tasks'][0]}"


def _query_format(value: Any) -> str:
    if not isinstance(value, dict):
        return str(value)
    return ", ".join(f"{k}={v!r}" for k, v in value.items())


def provenance(pivot: Pivot, ranked: GroupRanks | None = None) -> str:
    """Once per table: what the cells hold and what every entry of the table shares."""
    group = pivot.groups[0]
    comp = group["comparability"]
    metrics = pivot.metrics
    if pivot.kind == METRICS:
        what = f"systems \u00d7 metrics, ranked by {metric_name(metrics[0])}"
    else:
        what = (
            f"systems \u00d7 {'tasks' if pivot.kind == TASKS else 'history strategies'}, cells: "
            f"{', '.join(metric_name(m) for m in metrics)}"
            + ("; ranked by the mean" if pivot.has_mean else "")
            + ("; each column ranked within its own group" if pivot.kind == HISTORIES else "")
        )
    parts = [what, comp.get("reported_in") or f"label {comp['label']}"]
    if pivot.kind != HISTORIES:
        parts.append(f"history={comp['history'] or DASH}")
    parts.append(f"truncate={comp['truncate'] or DASH}")
    if comp.get("query_format"):
        parts.append(f"query format: {_query_format(comp['query_format'])}")
    for key in sorted(set(comp) - {"label", "history", "truncate", "query_format", "reported_in", "datasets"}):
        parts.append(f"{key}={comp[key]}")
    datasets = "; ".join(
        f"{task} ({d['split'] or DASH}, revision {d['dataset_revision'] or DASH})"
        for task, d in comp["datasets"].items()
    )
    parts.append(f"data: {datasets}")
    note = scale_note(metrics)
    if note:
        parts.append(note)
    if ranked is not None:
        parts.append(rank_note(pivot, ranked))
    return " \u00b7 ".join(parts)


def rank_note(pivot: Pivot, ranked: GroupRanks) -> str:
    """How the table's ranks were made, once: tie-aware or plain (and why) per column group, each sentence once."""
    lists = [ranked[(c.group_id, c.task)] for c in pivot.columns if (c.group_id, c.task) in ranked]
    notes = [r.note for r in lists if len(r.labels) > 1]  # a column of one system has nothing to rank
    if pivot.kind == METRICS:
        notes = notes[:1]
    text = "ranks: " + "; ".join(dict.fromkeys(notes)) if notes else ""
    if pivot.kind != METRICS and pivot.has_mean:
        text += ("; " if text else "") + "the row rank (by the mean) is plain"
    return text


def _entry_names(pivot: Pivot) -> dict[str, str]:
    return {c.entry_id: row.label for row in pivot.rows for c in row.cells if c.entry_id}


def detail(pivot: Pivot, by_id: dict[str, dict[str, Any]], turns: TurnCurves, ranked: GroupRanks | None = None) -> str:
    """Collapsed: per task (or strategy) every entry's metrics and settings, its bars and per-turn curves."""
    names = _entry_names(pivot)
    colour_of = dict(zip([r.label for r in pivot.rows], colours(len(pivot.rows))))  # one colour per row
    parts = []
    for group in pivot.groups:
        for task in group["tasks"]:
            main = group["main_scores"][task]
            ids = [i for i in group["entries"] if by_id[i]["task"] == task]
            heading = task + (f" \u00b7 history={group['comparability']['history']}" if pivot.kind == HISTORIES else "")
            parts.append(
                f'<div class="task" data-task="{escape(task)}"><h3>{escape(heading)} '
                f'<span class="metric">sorted by {escape(metric_name(main))}</span></h3>'
            )
            parts.append(task_table(group, task, by_id, names, (ranked or {}).get((group["id"], task))))
            items = [
                (names[i], by_id[i]["scores"][main], colour_of[names[i]])
                for i in ids
                if by_id[i]["scores"].get(main) is not None
            ]
            charts = [bar_chart(items, f"{task}: {metric_name(main)}")] if len(items) > 1 else []
            series = [
                Series(names[i], colour_of[names[i]], turns[i][main])
                for i in _ordered(ids, by_id, main)
                if main in turns.get(i, {})
            ]
            if series:
                charts.append(
                    turn_chart(
                        series,
                        f"{task}: {metric_name(main)} per turn, mean and 95% bootstrap band (conversations resampled)",
                    )
                )
            parts.append(f'<div class="charts">{"".join(charts)}</div></div>')
    n = sum(1 for g in pivot.groups for i in g["entries"])
    return (
        f'<details class="more"><summary>Detail: every metric, setting and source of the {n} entries'
        f"{', charts' if n > 1 else ''}</summary>{''.join(parts)}</details>"
    )


LONG_TABLE = 20  # rows: a table with more starts closed (its title and leader shown), so the page stays short


def pivot_section(
    pivot: Pivot,
    by_id: dict[str, dict[str, Any]],
    turns: TurnCurves,
    ranked: GroupRanks | None = None,
    explorers: Mapping[str, str] | None = None,
) -> str:
    title = escape(pivot_title(pivot, by_id))
    body = (
        f'<p class="provenance">{escape(provenance(pivot, ranked))}</p>{pivot_table(pivot, ranked, explorers)}'
        f"{detail(pivot, by_id, turns, ranked)}"
    )
    if len(pivot.rows) <= LONG_TABLE:
        return f'<section class="group" id="group-{escape(pivot.id)}"><h2>{title}</h2>{body}</section>'
    # A long table (a paper's 25 systems) is one click away: its title says what it holds and who leads.
    top = pivot.rows[0]
    lead = f"{top.label} {number(top.mean if pivot.has_mean else top.cells[0].value)}" if top.rank == 1 else ""
    return (
        f'<section class="group" id="group-{escape(pivot.id)}"><details class="table"><summary><h2>{title}</h2>'
        f'<span class="rows">{len(pivot.rows)} systems{escape(f", first: {lead}" if lead else "")}; '
        f"click to show the table</span></summary>{body}</details></section>"
    )


def separations_section(separations: list[str]) -> str:
    """Collapsed, with a count per reason in its summary line."""

    counts = Counter(name for s in separations for name in REASON_NAMES.values() if f"{name} differs" in s)
    averaged = sum("not averaged" in s for s in separations)
    reasons = [f"{name} {count}" for name, count in counts.most_common()]
    if averaged:
        reasons.append(f"not averaged {averaged}")
    return (
        f'<section id="separations"><details><summary>Why entries are kept apart: {len(separations)} '
        f'note(s) ({escape(", ".join(reasons))})</summary><ul class="separations">'
        + "".join(f"<li>{escape(s)}</li>" for s in separations)
        + "</ul></details></section>"
    )


def page_body(
    document: dict[str, Any],
    turns: TurnCurves | None = None,
    scores: Mapping[str, SystemScores] | None = None,
    explorers: Mapping[str, str] | None = None,
) -> str:
    """The page; ``scores`` (entry id -> per-query scores) makes ranks tie-aware where a ranked list has them all;
    ``explorers`` (task -> relative link) adds a link from each row of that task's tables to its explorer."""
    groups, separations = groups_of(document)
    by_id = {e["id"]: e for e in document["entries"]}
    tables = pivots(groups, document["entries"])
    ranked = group_rank_groups(groups, document["entries"], scores)
    meta = (
        f"{len(document['entries'])} entries \u00b7 {len(tables)} table(s) ({len(groups)} comparable group(s)) "
        f"\u00b7 created {document['created']} \u00b7 {document['generator']}"
    )
    nav = "".join(
        f'<li><a href="#group-{escape(p.id)}" title="{escape(pivot_title(p, by_id))}">'
        f"{escape(clipped(pivot_title(p, by_id), 48))}</a></li>"
        for p in tables
    )
    parts = [
        f"<header><h1>{escape(document['name'])}</h1>"
        f'<p class="description">{escape(document["description"])}</p>'
        f'<p class="meta">{escape(meta)}</p></header><main>',
        f'<nav><ul class="groups">{nav}</ul></nav>' if len(tables) > 1 else "",
        '<p class="hint">One table per comparable group (same label, history strategy, truncation, query '
        "format, source table and data); ranks hold only within it. Click a header to sort, again to reverse; "
        "open a table's detail for every metric, setting, command and source.</p>",
    ]
    parts += [pivot_section(p, by_id, turns or {}, ranked, explorers) for p in tables]
    if separations:
        parts.append(separations_section(separations))
    citations = sorted({e["source"]["citation"] for e in document["entries"] if e["label"] == "reported"})
    if citations:
        parts.append(
            '<section id="sources"><h2>Reported numbers are from</h2><ul class="sources">'
            + "".join(f"<li>{escape(c)}</li>" for c in citations)
            + "</ul></section>"
        )
    parts.append("</main><footer>Static page written by mtrbench leaderboard html; no external resources.</footer>")
    return "".join(parts)


def embedded_json(document: dict[str, Any]) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' can end the element early."""
    text = json_text(document, path="the leaderboard page's data", ensure_ascii=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def render_page(
    document: dict[str, Any],
    turns: TurnCurves | None = None,
    scores: Mapping[str, SystemScores] | None = None,
    explorers: Mapping[str, str] | None = None,
) -> str:
    template = resources.files("mtrbench.leaderboard").joinpath("page.html").read_text(encoding="utf-8")
    values = {
        "title": escape(f"{document['name']} \u00b7 mtrbench leaderboard"),
        "generator": escape(f"mtrbench {__version__}"),
        "data": embedded_json(document),
        "body": page_body(document, turns, scores, explorers),
    }
    # One pass over the template, so user text that looks like a placeholder is never substituted.
    return re.sub(r"\{\{(title|generator|body|data)\}\}", lambda m: values[m.group(1)], template)


def explorers_beside(document: dict[str, Any], output_dir: Path) -> dict[str, str]:
    """task -> link to its explorer, for each task whose `mtrbench explore` site was built at
    ``<output_dir>/explore/<task>/`` (beside the page)."""
    tasks = sorted({e["task"] for e in document["entries"]})
    return {t: f"explore/{quote(t)}/index.html" for t in tasks if (output_dir / "explore" / t / "index.html").is_file()}


def write_page(
    document: dict[str, Any],
    output_dir: Path,
    turns: TurnCurves | None = None,
    scores: Mapping[str, SystemScores] | None = None,
) -> Path:
    path = Path(output_dir) / "index.html"
    atomic_write_text(path, render_page(document, turns, scores, explorers_beside(document, Path(output_dir))))
    return path
