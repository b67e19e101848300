"""PNG bar charts of a leaderboard: one figure per comparable group."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mtrbench.leaderboard.charts import colours
from mtrbench.leaderboard.render import groups_of, system_label
from mtrbench.measures import label as pretty_name
from mtrbench.results.plot import new_figure, save_png
from mtrbench.results.writer import safe_name


def plot_leaderboard(document: dict[str, Any], output_dir: Path, metric: str | None = None) -> list[Path]:
    """One figure per comparable group: a bar per system and task (and the average, when there is one).

    Systems are sorted best first (by the average, else the first task), each has its own colour, every bar
    carries its value, and the legend sits outside the axes, so it never hides a bar or a label.
    """
    groups, _ = groups_of(document)
    by_id = {e["id"]: e for e in document["entries"]}
    written = []
    for group in groups:
        tasks = list(group["tasks"])
        metrics = {t: metric or group["main_scores"][t] for t in tasks}
        systems = list(group["systems"])
        columns = tasks + (["average"] if group["averages"] and len(set(metrics.values())) == 1 else [])
        values = {}
        for name in systems:
            row = []
            for column in columns:
                if column == "average":
                    row.append(group["averages"].get(name, {}).get(metrics[tasks[0]]))
                else:
                    entry_id = group["systems"][name]["entries"].get(column)
                    row.append(by_id[entry_id]["scores"].get(metrics[column]) if entry_id else None)
            values[name] = row
        if all(v is None for row in values.values() for v in row):
            continue
        key = len(columns) - 1 if columns[-1] == "average" else 0
        systems.sort(key=lambda n: (values[n][key] is None, -(values[n][key] or 0.0)))
        palette = dict(zip(group["systems"], colours(len(group["systems"]))))
        height = max(3.0, 0.28 * len(systems) * len(columns) + 1.5)
        figure = new_figure(11, min(height, 30))
        axis = figure.subplots()
        bar = 0.8 / max(len(systems), 1)
        for s, name in enumerate(systems):
            ys = [c + s * bar for c in range(len(columns))]
            widths = [v or 0.0 for v in values[name]]
            bars = axis.barh(ys, widths, height=bar * 0.92, label=_clip(system_label(name), 48),
                             color=palette[name])
            for rect, value in zip(bars, values[name]):
                if value is not None:
                    axis.text(rect.get_width(), rect.get_y() + rect.get_height() / 2, f" {value:.3f}",
                              va="center", fontsize=8)
        axis.set_yticks([c + bar * (len(systems) - 1) / 2 for c in range(len(columns))])
        axis.set_yticklabels([f"{c}\n{pretty_name(metrics[c] if c != 'average' else metrics[tasks[0]])}"
                              for c in columns])
        axis.invert_yaxis()
        top = max([1.0] + [v for row in values.values() for v in row if v is not None])
        axis.set_xlim(0, top * 1.12)
        axis.grid(axis="x", alpha=0.3)
        axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False)
        comp = group["comparability"]
        axis.set_title(f"{document['name']} {group['id']}: {comp['label']}, history={_clip(comp['history'])}, "
                       f"truncate={comp['truncate'] or '—'}", fontsize=10)
        written.append(save_png(figure, Path(output_dir) / f"{safe_name(document['name'])}__{group['id']}.png"))
    return written


def _clip(text: Any, limit: int = 40) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"
