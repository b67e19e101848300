"""A static leaderboard page: one self-contained index.html (inline CSS, JS and SVG; nothing fetched).

One section per comparable group (same label, history strategy, truncation, query format and dataset
revisions: see keys.py). Within a group, each task gets its own table with its own metric columns,
sorted by that task's main score (a header click re-sorts; again to reverse), its bar chart, and, when
result files were given, its per-turn curves with bootstrap bands. Entries are named by model and
setting; every entry's settings, command and source are one click away. Missing values show as an em
dash. Tables scroll inside their own box and charts scale, so the page fits a 390 px wide phone. The
leaderboard JSON is embedded for scripts.
"""

from __future__ import annotations

import json
import re
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

from mtrbench import __version__
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.leaderboard.charts import Series, bar_chart, colours, number, turn_chart
from mtrbench.leaderboard.keys import flatten, system_identity
from mtrbench.leaderboard.render import groups_of, system_label, system_summaries
from mtrbench.leaderboard.turns import TurnCurves
from mtrbench.measures import label as pretty_name

# Metric columns after the main score, when some entry of the table has them.
PREFERRED_METRICS = ("ndcg_at_10", "ndcg_at_20", "ndcg_at_5", "recall_at_5", "recall_at_10", "recall_at_20",
                     "recall_at_100", "mrr_at_10", "mrr", "hit_rate_at_5")
MAX_METRIC_COLUMNS = 5
DASH = "\u2014"


def clipped(text: str, limit: int = 32) -> str:
    """Long free text (a paper's description of its setting) cut short; the group heading has it whole."""
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "\u2026"


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
    rows += [(k, str(entry[k])) for k in ("model", "model_revision", "split", "dataset_revision", "date",
                                          "wall_time_s") if entry.get(k) is not None]
    if entry.get("hardware"):
        rows.append(("hardware", ", ".join(f"{k} {v}" for k, v in entry["hardware"].items() if v is not None)))
    rows += [(f"source.{k}", str(v)) for k, v in (entry.get("source") or {}).items() if v is not None]
    body = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows)
    command = (f'<p class="command"><code>{escape(entry["command"])}</code></p>' if entry.get("command") else "")
    return f"<details><summary>settings</summary><dl>{body}</dl>{command}</details>"


def entry_names(group: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """entry id -> (``model · history=H``, the system's notable settings) within its group."""
    systems = {system_identity(by_id[i]): name for name, s in group["systems"].items() for i in s["entries"].values()}
    summaries = system_summaries(group)
    history = group["comparability"].get("history")
    names = {}
    for entry_id in group["entries"]:
        system = systems[system_identity(by_id[entry_id])]
        label = system_label(system)
        if history:
            label += f" \u00b7 history={clipped(str(history))}"
        names[entry_id] = (label, summaries.get(system, ""))
    return names


def _ordered(ids: list[str], by_id: dict[str, dict[str, Any]], metric: str) -> list[str]:
    """Best main score first; entries without it last (in their original order)."""
    return sorted(ids, key=lambda i: (by_id[i]["scores"].get(metric) is None, -(by_id[i]["scores"].get(metric) or 0)))


def task_table(group: dict[str, Any], task: str, by_id: dict[str, dict[str, Any]],
               names: dict[str, tuple[str, str]]) -> str:
    main = group["main_scores"][task]
    ids = _ordered([i for i in group["entries"] if by_id[i]["task"] == task], by_id, main)
    metrics = metric_columns([by_id[i] for i in ids], main)
    head = ([_header("#", True), _header("entry")]
            + [_header(pretty_name(m), True, m, "main" if m == main else "") for m in metrics] + [_header("details")])
    ranks = group["ranks"].get(task, {})
    rows = []
    for entry_id in ids:
        entry = by_id[entry_id]
        name, summary = names[entry_id]
        rank = ranks.get(entry_id)
        label = '<span class="badge">reported</span>' if entry["label"] == "reported" else ""
        cells = [_cell(DASH if rank is None else str(rank), "" if rank is None else rank,
                       "num" + (" rank-1" if rank == 1 else "")),
                 _cell(f'<span class="name">{escape(name)}</span>{label}'
                       + (f'<span class="setting">{escape(summary)}</span>' if summary else ""), name, "entry")]
        for metric in metrics:
            value = entry["scores"].get(metric)
            cells.append(_cell(number(value), _sort_value(value), "num" + (" main" if metric == main else "")))
        cells.append(_cell(_details(entry)))
        tooltip = entry["command"] or entry["source"].get("citation") or ""
        css = ' class="reported"' if entry["label"] == "reported" else ""
        rows.append(f'<tr data-entry-id="{escape(entry_id)}" data-main="{_sort_value(entry["scores"].get(main))}"'
                    f'{css} title="{escape(tooltip)}">' + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table class="sortable board" data-group="{escape(group["id"])}" '
            f'data-task="{escape(task)}" data-main="{escape(main)}"><thead><tr>{"".join(head)}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def _averages(group: dict[str, Any], colour_of: dict[str, str]) -> str:
    if not group["averages"]:
        return ""
    metrics = list(dict.fromkeys(k for a in group["averages"].values() for k in a))[:MAX_METRIC_COLUMNS]
    first = metrics[0]
    order = sorted(group["averages"], key=lambda n: (group["averages"][n].get(first) is None,
                                                     -(group["averages"][n].get(first) or 0)))
    head = [_header("system")] + [_header(f"average {pretty_name(m)}", True, m) for m in metrics]
    summaries = system_summaries(group)
    rows = []
    for name in order:
        values = group["averages"][name]
        summary = summaries.get(name, "")
        cells = [_cell(f'<span class="name">{escape(system_label(name))}</span>'
                       + (f'<span class="setting">{escape(summary)}</span>' if summary else ""), name, "entry")]
        cells += [_cell(number(values.get(m)), _sort_value(values.get(m)), "num") for m in metrics]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    parts = [f'<h3>Averages over {escape(", ".join(group["average_over"]))}</h3>'
             f'<div class="scroll"><table class="sortable averages"><thead><tr>{"".join(head)}</tr></thead>'
             f'<tbody>{"".join(rows)}</tbody></table></div>']
    main_metrics = set(group["main_scores"].values())
    if len(main_metrics) == 1:
        metric = main_metrics.pop()
        items = [(system_label(n), v[metric], colour_of[n]) for n, v in group["averages"].items() if metric in v]
        parts.append(f'<div class="charts">{bar_chart(items, f"average: {pretty_name(metric)}")}</div>')
    return "".join(parts)


def group_section(group: dict[str, Any], by_id: dict[str, dict[str, Any]], turns: TurnCurves) -> str:
    comp = group["comparability"]
    title = " \u00b7 ".join(p for p in (group["id"], comp["label"], f"history={comp['history'] or DASH}",
                                          f"truncate={comp['truncate'] or DASH}", comp.get("reported_in")) if p)
    datasets = "; ".join(f"{task} ({d['split'] or DASH}, revision {d['dataset_revision'] or DASH})"
                         for task, d in comp["datasets"].items())
    names = entry_names(group, by_id)
    systems = {system_identity(by_id[i]): name for name, s in group["systems"].items() for i in s["entries"].values()}
    colour_of = dict(zip(group["systems"], colours(len(group["systems"]))))  # one colour per system, all charts
    parts = [f'<section class="group" id="group-{escape(group["id"])}"><h2>{escape(title)}</h2>'
             f'<p class="datasets">{escape(datasets)}</p>']
    for task in group["tasks"]:
        main = group["main_scores"][task]
        ids = [i for i in group["entries"] if by_id[i]["task"] == task]
        parts.append(f'<div class="task" data-task="{escape(task)}"><h3>{escape(task)} '
                     f'<span class="metric">sorted by {escape(pretty_name(main))}</span></h3>')
        parts.append(task_table(group, task, by_id, names))
        system_of = {i: systems[system_identity(by_id[i])] for i in ids}
        items = [(system_label(system_of[i]), by_id[i]["scores"][main], colour_of[system_of[i]])
                 for i in ids if by_id[i]["scores"].get(main) is not None]
        charts = [bar_chart(items, f"{task}: {pretty_name(main)}")] if items else []
        series = [Series(system_label(system_of[i]), colour_of[system_of[i]], turns[i][main])
                  for i in _ordered(ids, by_id, main) if main in turns.get(i, {})]
        if series:
            charts.append(turn_chart(series, f"{task}: {pretty_name(main)} per turn, mean and 95% bootstrap band "
                                             f"(conversations resampled)"))
        parts.append(f'<div class="charts">{"".join(charts)}</div></div>')
    parts.append(_averages(group, colour_of))
    parts.append("</section>")
    return "".join(parts)


def page_body(document: dict[str, Any], turns: TurnCurves | None = None) -> str:
    groups, separations = groups_of(document)
    by_id = {e["id"]: e for e in document["entries"]}
    meta = (f"{len(document['entries'])} entries in {len(groups)} comparable group(s) \u00b7 created "
            f"{document['created']} \u00b7 {document['generator']}")
    nav = "".join(f'<li><a href="#group-{escape(g["id"])}">{escape(g["id"])}</a>: {escape(", ".join(g["tasks"]))} '
                  f'\u00b7 history={escape(clipped(str(g["comparability"]["history"] or DASH)))}</li>' for g in groups)
    parts = [f"<header><h1>{escape(document['name'])}</h1>"
             f"<p class=\"description\">{escape(document['description'])}</p>"
             f"<p class=\"meta\">{escape(meta)}</p></header><main>",
             "<p class=\"hint\">Entries are ranked only within a comparable group (same history strategy, "
             "truncation, query format and dataset revisions), each task by its own main score. Click a column "
             "header to sort, again to reverse; open an entry's settings for its command and source.</p>",
             f'<nav><h2>Groups</h2><ul class="groups">{nav}</ul></nav>']
    parts += [group_section(group, by_id, turns or {}) for group in groups]
    if separations:
        parts.append("<section id=\"separations\"><h2>Why entries are kept apart</h2><ul class=\"separations\">"
                     + "".join(f"<li>{escape(s)}</li>" for s in separations) + "</ul></section>")
    citations = sorted({e["source"]["citation"] for e in document["entries"] if e["label"] == "reported"})
    if citations:
        parts.append("<section id=\"sources\"><h2>Reported numbers are from</h2><ul>"
                     + "".join(f"<li>{escape(c)}</li>" for c in citations) + "</ul></section>")
    parts.append("</main><footer>Static page written by mtrbench leaderboard html; no external resources.</footer>")
    return "".join(parts)


def embedded_json(document: dict[str, Any]) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' can end the element early."""
    text = json.dumps(document, ensure_ascii=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def render_page(document: dict[str, Any], turns: TurnCurves | None = None) -> str:
    template = resources.files("mtrbench.leaderboard").joinpath("page.html").read_text(encoding="utf-8")
    values = {"title": escape(f"{document['name']} \u00b7 mtrbench leaderboard"),
              "generator": escape(f"mtrbench {__version__}"), "data": embedded_json(document),
              "body": page_body(document, turns)}
    # One pass over the template, so user text that looks like a placeholder is never substituted.
    return re.sub(r"\{\{(title|generator|body|data)\}\}", lambda m: values[m.group(1)], template)


def write_page(document: dict[str, Any], output_dir: Path, turns: TurnCurves | None = None) -> Path:
    path = Path(output_dir) / "index.html"
    atomic_write_text(path, render_page(document, turns))
    return path

