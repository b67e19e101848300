"""Terminal tables of a leaderboard: one per comparability group (rich)."""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from mtrbench.analyses.compare_many import SystemScores
from mtrbench.infra.errors import MtrbenchError
from mtrbench.leaderboard.build import competition_ranks, group_entries
from mtrbench.leaderboard.charts import number
from mtrbench.leaderboard.keys import flatten
from mtrbench.leaderboard.metric_names import metric_name, scale_note
from mtrbench.leaderboard.ties import RankGroups, rank_groups
from mtrbench.results.labels import short_model
from mtrbench.results.table import GAPS, SUMMARY, compact_table, fits, print_table, print_titled

# System settings always worth a glance; any other one is shown when it differs within the group.
SHOWN_SETTINGS = (
    "max_length",
    "retriever.dtype",
    "retriever.query_prompt",
    "retriever.doc_prompt",
    "retriever.k1",
    "retriever.b",
    "row",
)
HEADLINE_COLUMNS = 4  # metrics in the single-task table (main score first)
MAX_FAMILY_COLUMNS = 8  # or, for metrics outside the headline list (judge ratings per category), up to this many
NOTES_SHOWN = 3  # notes on why entries are kept apart, printed under the tables


def groups_of(document: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The stored groups, or computed ones for files written by hand (e.g. reported.json)."""
    if document.get("groups"):
        return document["groups"], document.get("separations", [])
    return group_entries(document["entries"])


def system_summaries(group: dict[str, Any]) -> dict[str, str]:
    """system -> its notable settings, short (``max_length=256 dtype=fp32``)."""
    flats = {name: flatten(system.get("settings", {})) for name, system in group["systems"].items()}
    keys = set().union(*flats.values()) if flats else set()
    # Settings every system has but with different values (not those only one kind of retriever has).
    differing = {
        k
        for k in keys
        if all(f.get(k) is not None for f in flats.values()) and len({repr(f[k]) for f in flats.values()}) > 1
    }
    shown = [k for k in SHOWN_SETTINGS if k in keys] + sorted(differing - set(SHOWN_SETTINGS))
    summaries = {}
    for name, values in flats.items():
        if values.get("row") == group["systems"][name]["model"]:
            values = {k: v for k, v in values.items() if k != "row"}  # the paper's row label is the model name
        parts = [
            f"{k.rsplit('.', 1)[-1]}={values[k]!r}"
            if isinstance(values[k], str) and not values[k].isalnum()
            else f"{k.rsplit('.', 1)[-1]}={values[k]}"
            for k in shown
            if values.get(k) not in (None, "")
        ]
        summaries[name] = " ".join(parts)
    return summaries


def system_label(system_name: str) -> str:
    """A system's name with its model shortened: ``org/model [detail]`` -> ``model [detail]``."""
    model, _, detail = system_name.partition(" [")
    return short_model(model) + (f" [{detail}" if detail else "")


def group_title(group: dict[str, Any]) -> str:
    comp = group["comparability"]
    parts = [group["id"], comp["label"], f"history={comp['history'] or '?'}", f"truncate={comp['truncate'] or '?'}"]
    if comp.get("reported_in"):
        parts.append(comp["reported_in"])
    datasets = [
        f"{task} ({d['split'] or '?'}, revision {d['dataset_revision'] or '?'})" for task, d in comp["datasets"].items()
    ]
    return " · ".join(parts) + "\n" + "; ".join(datasets)


def _value(entry: dict[str, Any] | None, metric: str) -> float | None:
    return None if entry is None else entry["scores"].get(metric)


def _cell(value: float | None, rank: int | str | None = None) -> str:
    if value is None:
        return "-"
    return number(value) + (f" ({rank})" if rank is not None else "")


def render(
    document: dict[str, Any],
    console: Console,
    task: str | None = None,
    metric: str | None = None,
    scores: Mapping[str, SystemScores] | None = None,
) -> None:
    """Print the tables; ``scores`` (entry id -> per-query scores) makes ranks tie-aware where every system of
    a ranked list has them."""
    groups, separations = groups_of(document)
    by_id = {e["id"]: e for e in document["entries"]}
    if task is not None:
        groups = [g for g in groups if task in g["tasks"]]
        if not groups:
            tasks = sorted({e["task"] for e in document["entries"]})
            raise MtrbenchError(f"no entry for task '{task}' in {document['name']}; tasks: {', '.join(tasks)}")
    heading = Text(document["name"], style="bold")
    heading.append(
        f": {document['description']} ({len(document['entries'])} entries, {len(groups)} group(s))", style="not bold"
    )
    console.print(heading)
    shown = 0
    for group in groups:
        made = _table(group, by_id, task, metric, scores, console.width)
        if made is not None:
            tables, caption, below = made
            console.print()
            print_titled(console, f"{group_title(group)}\n{caption}", tables[0])
            for table in tables[1:]:  # the panels of a table too wide for the console, one under the other
                console.print()
                print_table(console, table)
            for line in below:
                console.print(Text(line), overflow="fold")
            shown += 1
    if metric and not shown:
        raise MtrbenchError(f"no entry has the metric '{metric}'")
    ids = {f"({g['id']})" for g in groups}
    notes = [n for n in separations if any(i in n for i in ids)]
    if notes:
        console.print(
            Text(
                f"{len(notes)} note(s) on why entries are kept apart"
                + (f', the first {NOTES_SHOWN} (all: the file\'s "separations")' if len(notes) > NOTES_SHOWN else "")
                + ":",
                style="dim",
            )
        )
    for sentence in notes[:NOTES_SHOWN]:
        console.print(Text(f"- {sentence}", style="dim"))


@dataclass(frozen=True)
class Layout:
    """How a table is drawn: the settings in a column (else listed under the table), and names (tasks in
    headers, models) in one piece, or broken after their ``-``, ``_`` or ``/`` into lines of at most
    ``name_width`` characters."""

    settings_column: bool = True
    name_width: int | None = None


NARROWEST_NAMES = 8  # the narrowest lines names are broken into before the table outgrows the console


def layouts() -> Iterator[Layout]:
    """From the widest to the narrowest: the first whose table fits the console with every word whole is drawn."""
    yield Layout()
    yield Layout(settings_column=False)
    for width in range(36, NARROWEST_NAMES - 1, -1):
        yield Layout(settings_column=False, name_width=width)


def _table(
    group: dict[str, Any],
    by_id: dict[str, Any],
    task: str | None,
    metric: str | None,
    scores: Mapping[str, SystemScores] | None,
    width: int,
) -> tuple[list[Table], str, list[str]] | None:
    """The group's table (or, where none fits, its panels), its caption, and the lines to print under it (the
    settings, when they are not a column): the first of ``layouts()`` that fits ``width`` columns without
    breaking a word, with the usual gap between columns or, where none does, the narrower one (``print_table``
    narrows it the same way); where no layout fits at all, the score columns split into panels printed one
    under the other (``panels``); the narrowest layout where even one score column per panel cannot fit."""
    made: dict[Layout, tuple[Table, str, list[str]] | None] = {}  # each layout's table, built once
    drawn = None
    for gap in GAPS:
        for layout in layouts():
            if layout not in made:
                made[layout] = _layout_table(group, by_id, task, metric, scores, layout)
            built = made[layout]
            if built is None:
                return None
            drawn = built
            if fits(drawn[0], width, gap):
                return [drawn[0]], drawn[1], drawn[2]
    if drawn is None:
        return None
    best: tuple[tuple[int, int, int], list[list[int]], tuple[Table, str, list[str]]] | None = None
    seen: set[object] = set()  # the tables and splits already weighed
    for order, layout in enumerate(layouts()):
        built = made.get(layout)
        if built is None or layout.settings_column:  # the settings go under the panels
            continue
        signature = tuple(str(c) for column in built[0].columns for c in [column.header, *column.cells])
        if signature in seen:  # names short enough that this layout draws what a wider one did
            continue
        seen.add(signature)
        tests: list[Callable[[Table], bool]] = [_natural_fit(width), *(partial(fits, width=width, gap=g) for g in GAPS)]
        for fit in tests:
            split = panels(built[0], fit)
            if split is None or (signature, str(split)) in seen:
                continue
            seen.add((signature, str(split)))
            rank = (printed_lines([_panel(built[0], part) for part in split], width), len(split), order)
            if best is None or rank < best[0]:
                best = (rank, split, built)
    if best is None:
        return [drawn[0]], drawn[1], drawn[2]
    _, split, (table, caption, below) = best
    note = f"\nin {len(split)} panels (too wide for {width} columns), each repeating # and model"
    return [_panel(table, part) for part in split], caption + note, below


KEY_COLUMNS = 2  # "#" and "model": repeated in every panel


def _natural_fit(width: int) -> Callable[[Table], bool]:
    """Whether a table is drawn within ``width`` columns as it is, no cell wrapped (as ``print_table`` checks)."""
    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False)
    options = console.options.update_width(10_000)
    return lambda table: Measurement.get(console, options, table).maximum <= width


def printed_lines(tables: list[Table], width: int) -> int:
    """How many lines ``print_table`` draws these tables in at ``width`` columns (a blank line between two)."""
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, force_terminal=False)
    for table in tables:
        print_table(console, table)
    return out.getvalue().count("\n") + len(tables) - 1


def panels(table: Table, fit: Callable[[Table], bool]) -> list[list[int]] | None:
    """``table``'s score columns (those after the ``KEY_COLUMNS``, rank and model) in the fewest panels of
    consecutive columns for which ``fit`` holds, each panel to repeat the key columns: as evenly many columns
    per panel as fit, else as many as fit into each panel in turn; None where one score column cannot fit."""
    scored = list(range(KEY_COLUMNS, len(table.columns)))
    if not scored:
        return None
    greedy: list[list[int]] = []
    for index in scored:
        if greedy and fit(_panel(table, greedy[-1] + [index])):
            greedy[-1].append(index)
        elif fit(_panel(table, [index])):
            greedy.append([index])
        else:
            return None
    size, extra = divmod(len(scored), len(greedy))
    even, at = [], 0
    for n in range(len(greedy)):  # the same number of panels, the first ``extra`` one column wider
        step = size + (1 if n < extra else 0)
        even.append(scored[at : at + step])
        at += step
    return even if all(fit(_panel(table, part)) for part in even) else greedy


def _panel(table: Table, indexes: list[int]) -> Table:
    """A new table of ``table``'s key columns and the columns at ``indexes``, cells and column settings kept."""
    panel = compact_table()
    columns = [*table.columns[:KEY_COLUMNS], *(table.columns[i] for i in indexes)]
    for column in columns:
        panel.add_column(
            column.header,
            justify=column.justify,
            overflow=column.overflow,
            min_width=column.min_width,
            no_wrap=column.no_wrap,
        )
    for row in zip(*(list(column.cells) for column in columns)):
        panel.add_row(*row)
    return panel


def _layout_table(
    group: dict[str, Any],
    by_id: dict[str, Any],
    task: str | None,
    metric: str | None,
    scores: Mapping[str, SystemScores] | None,
    layout: Layout,
) -> tuple[Table, str, list[str]] | None:
    """The table of one layout, no column narrower than its longest word, its caption and the lines under it."""
    if task:
        made = _task_table(group, by_id, task, metric, scores, layout)
    else:
        made = _group_table(group, by_id, metric, scores, layout)
    if made is None:
        return None
    table, caption, names = made
    _keep_words_whole(table)
    return table, caption, [] if layout.settings_column else _settings_lines(group, names)


def _keep_words_whole(table: Table) -> None:
    """No column narrower than its longest word (header or cell): ``Recall@100`` or ``max_length=256`` never
    breaks in the middle; text wraps between words only."""
    for column in table.columns:
        cells = [column.header, *column.cells]
        longest = max((len(word) for cell in cells for word in str(cell).split()), default=0)
        column.min_width = max(column.min_width or 0, longest)


def _settings_lines(group: dict[str, Any], names: list[str]) -> list[str]:
    """The settings of the systems shown (in the table's order), one line each, for under the table."""
    summaries = system_summaries(group)
    shown = [name for name in names if summaries.get(name)]
    return ["settings:"] + [f"  {system_label(name)}: {summaries[name]}" for name in shown] if shown else []


NAME_BREAKS = re.compile(r"(?<=[-_/])")


def _name(text: str, layout: Layout) -> str:
    """``text``, or where it is longer than the layout's ``name_width``, lines of at most that many characters
    broken after a ``-``, ``_`` or ``/`` (``chatrag-topiocqa`` -> ``chatrag-`` / ``topiocqa``): a compound
    name breaks where its parts join, never inside one."""
    width = layout.name_width
    if width is None or len(text) <= width:
        return text
    lines: list[str] = []
    for part in NAME_BREAKS.split(text):
        if lines and len(lines[-1]) + len(part) <= width:
            lines[-1] += part
        elif part:
            lines.append(part)
    return "\n".join(lines)


def _model_column(table: Table, names: list[str], layout: Layout) -> None:
    """Short model names (``org/`` dropped), wide enough that a name wraps only when it cannot fit."""
    widest = max([5] + [len(line) for n in names for line in _name(system_label(n), layout).splitlines()])
    table.add_column("model", overflow="fold", min_width=min(widest, 36))


def _ranked(
    systems: dict[str, dict[str, Any] | None], metric: str, scores: Mapping[str, SystemScores] | None
) -> RankGroups:
    """Rank groups of the systems that have ``metric`` (system name -> its entry, None where it has none)."""
    values = {n: v for n, e in systems.items() if (v := _value(e, metric)) is not None}
    by_name = {n: scores[e["id"]] for n, e in systems.items() if e is not None and scores and e["id"] in scores}
    return rank_groups(values, by_name, metric)


def rank_caption(notes: list[str]) -> str:
    """The ranking method once per table (each distinct sentence once)."""
    distinct = list(dict.fromkeys(notes))
    return "; ".join(distinct)


def _group_table(
    group: dict[str, Any],
    by_id: dict[str, Any],
    metric: str | None,
    scores: Mapping[str, SystemScores] | None,
    layout: Layout = Layout(),
) -> tuple[Table, str, list[str]] | None:
    """The group's systems x tasks table, and what its cells hold (for the title)."""
    tasks = group["tasks"]
    metrics = {t: metric or group["main_scores"][t] for t in tasks}
    entries = {name: {t: by_id[i] for t, i in system["entries"].items()} for name, system in group["systems"].items()}
    if metric and not any(_value(e, metric) is not None for s in entries.values() for e in s.values()):
        return None
    task_ranks = {t: _ranked({n: entries[n].get(t) for n in entries}, metrics[t], scores) for t in tasks}
    average_metric = metric or (next(iter(set(metrics.values()))) if len(set(metrics.values())) == 1 else None)
    averages = {n: a[average_metric] for n, a in group["averages"].items() if average_metric in a}
    if averages:
        plain = competition_ranks(averages)
        order_labels, order_first = {n: str(r) for n, r in plain.items()}, plain
    else:
        order_labels, order_first = task_ranks[tasks[0]].labels, task_ranks[tasks[0]].first
    # within a tie group, the first task's score orders the rows (equal plain ranks keep the name order)
    first_values = {n: 0.0 if averages else _value(entries[n].get(tasks[0]), metrics[tasks[0]]) or 0.0 for n in entries}
    names = sorted(entries, key=lambda n: (order_first.get(n, 10**9), -first_values[n], n))
    one_metric = len(set(metrics.values())) == 1
    table = compact_table()
    table.add_column("#", justify="right")
    _model_column(table, names, layout)
    for t in tasks:  # one metric for all: named once in the caption, the header is the task alone
        header = _name(t, layout) + ("" if one_metric else f"\n{metric_name(metrics[t], short=True)}")
        table.add_column(header, justify="right")
    if averages:
        table.add_column("average", justify="right")
    summaries = system_summaries(group) if layout.settings_column else {}
    if any(summaries.values()):
        table.add_column("settings", overflow="fold")
    for name in names:
        row = [order_labels.get(name, "-"), _name(system_label(name), layout)]
        row += [_cell(_value(entries[name].get(t), metrics[t]), task_ranks[t].labels.get(name)) for t in tasks]
        if averages:
            row.append(_cell(averages.get(name)))
        if any(summaries.values()):
            row.append(summaries.get(name, ""))
        table.add_row(*row)
    shown = sorted(set(metrics.values()))
    caption = f"cells: {', '.join(metric_name(m) for m in shown)} (rank within the task)" + (
        f"; average over {len(tasks)} tasks (# ranks the average: plain ranks)" if averages else ""
    )
    notes = [r.note for r in task_ranks.values() if len(r.labels) > 1]
    return table, caption + (f"\nranks: {rank_caption(notes)}" if notes else ""), names


def _task_table(
    group: dict[str, Any],
    by_id: dict[str, Any],
    task: str,
    metric: str | None,
    scores: Mapping[str, SystemScores] | None,
    layout: Layout = Layout(),
) -> tuple[Table, str, list[str]] | None:
    main = metric or group["main_scores"][task]
    systems = {name: by_id[s["entries"][task]] for name, s in group["systems"].items() if task in s["entries"]}
    values = {n: e["scores"][main] for n, e in systems.items() if main in e["scores"]}
    if not values:
        return None
    ranks = _ranked(dict(systems), main, scores)
    present = {k for e in systems.values() for k in e["scores"]}
    others = [k for k in SUMMARY if k != main and k in present]
    if not others:  # a family outside the headline list (judge ratings): all of its keys
        others = sorted(present - {main})
    keys = ([main] + others)[: HEADLINE_COLUMNS if others[:1] and others[0] in SUMMARY else MAX_FAMILY_COLUMNS]
    table = compact_table()
    table.add_column("#", justify="right")
    _model_column(table, list(systems), layout)
    for key in keys:
        table.add_column(metric_name(key, short=True) + ("*" if key == main else ""), justify="right")
    summaries = system_summaries(group) if layout.settings_column else {}
    if any(summaries.get(name) for name in systems):
        table.add_column("settings", overflow="fold")
    names = sorted(systems, key=lambda n: (ranks.first.get(n, 10**9), -values.get(n, 0.0), n))
    for name in names:
        cells = [
            ranks.labels.get(name, "-"),
            _name(system_label(name), layout),
            *(_cell(_value(systems[name], k)) for k in keys),
        ]
        if any(summaries.get(n) for n in systems):
            cells.append(summaries.get(name, ""))
        table.add_row(*cells)
    caption = "* main score, rows ranked by it" + (f"; {scale_note(keys)}" if scale_note(keys) else "")
    return table, caption + (f"\nranks: {ranks.note}" if len(values) > 1 else ""), names
