"""A static leaderboard page: one self-contained index.html (inline CSS, JS and SVG; nothing fetched).

The entries table sorts on a header click (numbers numerically; again to reverse); each comparable
group gets its per-task bar charts (SVG drawn here) and its averages; every entry's settings,
command and source are one click away. The leaderboard JSON is embedded for scripts.
"""

from __future__ import annotations

import json
import re
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

from mtrbench import __version__
from mtrbench.atomic import atomic_write_text
from mtrbench.leaderboard.keys import system_identity
from mtrbench.leaderboard.render import group_title, groups_of, system_label, system_summaries
from mtrbench.measures import label as pretty_name

# Metric columns of the entries table, when some entry has them.
PREFERRED_METRICS = ("ndcg_at_10", "ndcg_at_20", "recall_at_5", "recall_at_10", "recall_at_20", "recall_at_100",
                     "mrr_at_10", "mrr_at_20", "hit_rate_at_5")
MAX_METRIC_COLUMNS = 6
BAR_HEIGHT, LABEL_WIDTH, BAR_AREA, CHART_PAD = 22, 230, 300, 56


def number(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.4f}" if abs(value) <= 1 else f"{value:.2f}"


def _cell(text: str, sort: Any = None, css: str = "") -> str:
    sort_attr = "" if sort is None else f' data-sort="{escape(str(sort))}"'
    class_attr = f' class="{css}"' if css else ""
    return f"<td{class_attr}{sort_attr}>{text}</td>"


def _header(label: str, numeric: bool = False, key: str = "") -> str:
    attrs = ' data-type="number" class="num"' if numeric else ' data-type="text"'
    if key:
        attrs += f' data-key="{escape(key)}"'
    return f"<th{attrs}>{escape(label)}</th>"


def metric_columns(entries: list[dict[str, Any]]) -> list[str]:
    present = {k for e in entries for k in e["scores"]}
    return [k for k in PREFERRED_METRICS if k in present][:MAX_METRIC_COLUMNS]


def _clipped(text: str, limit: int = 40) -> str:
    """Long free text (a paper's description of its setting) clipped, whole in the tooltip."""
    if len(text) <= limit:
        return escape(text)
    return f'<span title="{escape(text)}">{escape(text[:limit - 1])}\u2026</span>'


def _settings_summary(entry: dict[str, Any]) -> str:
    s = entry["settings"]
    parts = [f"history={s.get('history')}", f"truncate={s.get('truncate')}"]
    if s.get("max_length") is not None:
        parts.append(f"max_length={s['max_length']}")
    dtype = (s.get("retriever") or {}).get("dtype") if isinstance(s.get("retriever"), dict) else None
    if dtype:
        parts.append(dtype)
    text = ", ".join(parts)
    return text if len(text) <= 60 else text[:57] + "..."


def _details(entry: dict[str, Any]) -> str:
    shown = {"settings": entry["settings"], "command": entry["command"], "date": entry["date"],
             "wall_time_s": entry["wall_time_s"], "harness": entry["harness"], "hardware": entry["hardware"],
             "model_revision": entry["model_revision"], "dataset_revision": entry["dataset_revision"],
             "split": entry["split"], "source": entry["source"]}
    body = escape(json.dumps(shown, indent=2, ensure_ascii=False))
    return f"<details><summary>{escape(_settings_summary(entry))}</summary><pre>{body}</pre></details>"


def entries_table(document: dict[str, Any], groups: list[dict[str, Any]]) -> str:
    entries = document["entries"]
    by_id = {e["id"]: e for e in entries}
    memberships: dict[str, list[tuple[str, int | None]]] = {e["id"]: [] for e in entries}
    for group in groups:
        for entry_id in group["entries"]:
            task = by_id[entry_id]["task"]
            memberships[entry_id].append((group["id"], group["ranks"].get(task, {}).get(entry_id)))
    metrics = metric_columns(entries)
    head = ([_header("group"), _header("rank", True), _header("model"), _header("task"), _header("history"),
             _header("main score", True, "main_value")]
            + [_header(pretty_name(m), True, m) for m in metrics]
            + [_header("truncate"), _header("max length", True), _header("label"), _header("date"),
               _header("settings, command, source")])
    rows = []
    for entry in entries:
        groups_in = memberships[entry["id"]]
        ranks = [r for _, r in groups_in if r is not None]
        main_value = entry["scores"].get(entry["main_score"])
        settings = entry["settings"]
        cells = [
            _cell(escape(", ".join(g for g, _ in groups_in)), ",".join(g for g, _ in groups_in)),
            _cell(escape(", ".join(str(r) for r in ranks)), min(ranks) if ranks else "",
                  "num" + (" rank-1" if 1 in ranks else "")),
            _cell(escape(entry["model"])),
            _cell(escape(entry["task"])),
            _cell(_clipped(str(settings.get("history") or "")), str(settings.get("history") or "")),
            _cell(f'{number(main_value)} <span class="metric">{escape(pretty_name(entry["main_score"]))}</span>',
                  "" if main_value is None else repr(main_value), "num"),
        ]
        for metric in metrics:
            value = entry["scores"].get(metric)
            cells.append(_cell(number(value), "" if value is None else repr(value), "num"))
        max_length = settings.get("max_length")
        cells += [_cell(escape(str(settings.get("truncate") or ""))),
                  _cell("" if max_length is None else str(max_length), "" if max_length is None else max_length, "num"),
                  _cell(escape(entry["label"])), _cell(escape(str(entry["date"] or ""))), _cell(_details(entry))]
        tooltip = entry["command"] or entry["source"].get("citation") or ""
        css = ' class="reported"' if entry["label"] == "reported" else ""
        rows.append(f'<tr id="entry-{escape(entry["id"])}" data-entry-id="{escape(entry["id"])}"{css} '
                    f'title="{escape(tooltip)}">' + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table id="entries" class="sortable"><thead><tr>{"".join(head)}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def bar_chart(items: list[tuple[str, float]], caption: str) -> str:
    """Horizontal bars, best first; the scale is 0-1 unless a value exceeds 1."""
    items = sorted(items, key=lambda item: -item[1])
    top = max([1.0] + [v for _, v in items])
    height = BAR_HEIGHT * len(items) + 8
    width = LABEL_WIDTH + BAR_AREA + CHART_PAD
    parts = [f'<svg width="{width}" height="{height}" role="img" '
             f'aria-label="{escape(caption)}">',
             f'<line class="axis" x1="{LABEL_WIDTH}" y1="0" x2="{LABEL_WIDTH}" y2="{height}"/>']
    best = items[0][1] if items else None
    for n, (label, value) in enumerate(items):
        y = 4 + n * BAR_HEIGHT
        length = max(1.0, BAR_AREA * value / top) if value > 0 else 0
        shown = label if len(label) <= 32 else label[:31] + "\u2026"
        css = "bar top" if value == best else "bar"
        parts.append(f'<text x="{LABEL_WIDTH - 6}" y="{y + 15}" text-anchor="end">{escape(shown)}</text>'
                     f'<rect class="{css}" x="{LABEL_WIDTH}" y="{y + 3}" width="{length:.1f}" '
                     f'height="{BAR_HEIGHT - 6}">'
                     f'<title>{escape(label)}: {number(value)}</title></rect>'
                     f'<text x="{LABEL_WIDTH + length + 4:.1f}" y="{y + 15}">{number(value)}</text>')
    parts.append("</svg>")
    return f"<figure><figcaption>{escape(caption)}</figcaption>{''.join(parts)}</figure>"


def group_section(group: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> str:
    title, datasets = group_title(group).split("\n", 1)
    names = {system_identity(by_id[i]): name for name, s in group["systems"].items() for i in s["entries"].values()}
    charts = []
    for task in group["tasks"]:
        main = group["main_scores"][task]
        items = [(system_label(names[system_identity(by_id[i])]), by_id[i]["scores"][main]) for i in group["entries"]
                 if by_id[i]["task"] == task and main in by_id[i]["scores"]]
        charts.append(bar_chart(items, f"{task}: {pretty_name(main)}"))
    averages = ""
    if group["averages"]:
        metrics = list(dict.fromkeys(k for a in group["averages"].values() for k in a))
        shown = metrics[:MAX_METRIC_COLUMNS]
        head = [_header("system"), _header("settings")] + [_header(f"average {pretty_name(m)}", True, m) for m in shown]
        summaries = system_summaries(group)
        rows = []
        for name, values in group["averages"].items():
            cells = [_cell(escape(name)), _cell(escape(summaries.get(name, "")))]
            cells += [_cell(number(values.get(m)), "" if values.get(m) is None else repr(values[m]), "num")
                      for m in shown]
            rows.append("<tr>" + "".join(cells) + "</tr>")
        averages = (f'<h3>Averages over {escape(", ".join(group["average_over"]))}</h3>'
                    f'<div class="scroll"><table class="sortable averages"><thead><tr>{"".join(head)}</tr></thead>'
                    f'<tbody>{"".join(rows)}</tbody></table></div>')
        main_metrics = set(group["main_scores"].values())
        if len(main_metrics) == 1:
            metric = main_metrics.pop()
            items = [(system_label(n), v[metric]) for n, v in group["averages"].items() if metric in v]
            charts.append(bar_chart(items, f"average: {pretty_name(metric)}"))
    return (f'<section class="group" id="group-{escape(group["id"])}"><h2>{escape(title)}</h2>'
            f'<p class="datasets">{escape(datasets)}</p>{averages}'
            f'<div class="charts">{"".join(charts)}</div></section>')


def page_body(document: dict[str, Any]) -> str:
    groups, separations = groups_of(document)
    by_id = {e["id"]: e for e in document["entries"]}
    meta = (f"{len(document['entries'])} entries in {len(groups)} comparable group(s) · created "
            f"{document['created']} · {document['generator']}")
    parts = [f"<header><h1>{escape(document['name'])}</h1>"
             f"<p class=\"description\">{escape(document['description'])}</p>"
             f"<p class=\"meta\">{escape(meta)}</p></header><main>",
             "<section id=\"all-entries\"><h2>Entries</h2><p class=\"hint\">Click a column header to sort, again to "
             "reverse. Ranks count within a group (same history strategy, truncation, query format and dataset "
             "revisions); open a row's settings for its command and source.</p>",
             entries_table(document, groups), "</section>"]
    parts += [group_section(group, by_id) for group in groups]
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


def render_page(document: dict[str, Any]) -> str:
    template = resources.files("mtrbench.leaderboard").joinpath("page.html").read_text(encoding="utf-8")
    values = {"title": escape(f"{document['name']} · mtrbench leaderboard"),
              "generator": escape(f"mtrbench {__version__}"), "data": embedded_json(document),
              "body": page_body(document)}
    # One pass over the template, so user text that looks like a placeholder is never substituted.
    return re.sub(r"\{\{(title|generator|body|data)\}\}", lambda m: values[m.group(1)], template)


def write_page(document: dict[str, Any], output_dir: Path) -> Path:
    path = Path(output_dir) / "index.html"
    atomic_write_text(path, render_page(document))
    return path
