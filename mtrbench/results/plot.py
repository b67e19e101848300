"""PNG figures (matplotlib, no display needed): per-turn curves of results by history strategy, as small multiples."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

from mtrbench.analyses.turn_bands import turn_bands
from mtrbench.data import load_task
from mtrbench.infra.atomic import atomic_write_bytes
from mtrbench.infra.errors import DataError, MtrbenchError
from mtrbench.measures import label as pretty_name
from mtrbench.results.documents import find_inputs
from mtrbench.results.labels import canonical, short_model
from mtrbench.results.result import QueryScores, Result
from mtrbench.results.writer import safe_name

TURN_FAMILIES = ("recall", "ndcg")
DPI = 110


def new_figure(width: float, height: float):
    # A bare Figure draws with the Agg canvas on savefig: no pyplot state, no display backend.
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def unique_stem(stem: str, used: set[str], separator: str) -> str:
    """``stem``, or ``stem<separator>2``, ``3``, ... when taken; recorded in ``used``."""
    name, count = stem, 1
    while name in used:
        count += 1
        name = f"{stem}{separator}{count}"
    used.add(name)
    return name


def save_png(figure, path: Path) -> Path:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    atomic_write_bytes(path, buffer.getvalue())
    return path


def _curve_groups(paths: list[str | Path]) -> dict[str, list[Result]]:
    """Results that differ only in history strategy share one figure."""
    inputs = find_inputs(paths)
    if not inputs.results:
        raise MtrbenchError(f"no `mtrbench eval` result among {', '.join(map(str, paths))}")
    groups: dict[str, list[Result]] = {}
    for path in inputs.results:
        result = Result.load(path)
        if not isinstance(result.breakdowns.get("turn"), dict):
            raise DataError(f"{path}: no per-turn breakdown (mtrbench.breakdowns.turn) to plot")
        settings = {k: v for k, v in result.settings.items() if k != "history"}
        key = canonical([result.task_name, result.dataset_revision, result.model_info, settings])
        groups.setdefault(key, []).append(result)
    return groups


def _rows_or_none(result: Result) -> list[QueryScores] | None:
    try:
        return result.per_query
    except MtrbenchError:
        return None  # a result copied without its per-query file: the curve is drawn without a band


def switch_turns(result: Result) -> Counter[int]:
    """Conversations per last turn before a hard topic switch (the task's ``switch_turn``); empty when the
    task has none or cannot be loaded here (the figure then says so)."""

    try:
        data = load_task(result.task_name, split=result.split, require_corpus=False)
    except (MtrbenchError, OSError, ValueError):
        return Counter()
    per_conversation = {q.conversation_id: q.meta.get("switch_turn") for q in data.queries}
    return Counter(t for t in per_conversation.values() if isinstance(t, int) and t > 0)


def _mark_switch(axis, switches: Counter[int], label: bool) -> None:
    """A dashed line between the last turn of the first topic and the first of the next, per switch turn."""
    total = sum(switches.values())
    for turn, count in sorted(switches.items()):
        axis.axvline(turn + 0.5, color="0.35", linestyle="--", linewidth=1.0, alpha=0.35 + 0.6 * count / total)
    if label and switches:
        axis.text(
            min(switches) + 0.45, 0.03, "topic switch", rotation=90, fontsize=7, color="0.3", ha="right", va="bottom"
        )


def _band_rows(rows: list[QueryScores] | None, key: str):
    return [
        (r.conversation_id, r.turn_id, r.values[key])
        for r in rows or []
        if key in r.values and isinstance(r.turn_id, int) and r.conversation_id is not None
    ]


def plot_turn_curves(paths: list[str | Path], output_dir: Path, k: int = 10) -> list[Path]:
    """One figure per (task, model, settings), small multiples: a row per metric (Recall@k, nDCG@k), a column per
    history strategy. Each panel draws its strategy's mean per turn inside its 95% bootstrap band over
    conversations (from the per-query file, when it is there), the other strategies as thin grey lines for
    reference, and the task's topic switch as dashed lines (their darkness: how many conversations switch there)."""
    import textwrap

    written = []
    names_used: set[str] = set()
    for results in _curve_groups(paths).values():
        results = sorted(results, key=lambda r: r.history or "")
        rows_of = {id(result): _rows_or_none(result) for result in results}
        first = results[0]
        task, model = first.task_name, first.model_name
        switches = switch_turns(first)
        n = len(results)
        figure = new_figure(2.7 * n + 1.2, 5.6)
        axes = figure.subplots(len(TURN_FAMILIES), n, sharex=True, sharey=True, squeeze=False)
        colours = [f"C{i}" for i in range(n)]
        drawn = False
        for row, family in enumerate(TURN_FAMILIES):
            key = f"{family}_at_{k}"
            curves = {}
            for result in results:
                turns = result.breakdowns["turn"]
                points = sorted((int(t), r[key]) for t, r in turns.items() if key in r)
                if points:
                    curves[id(result)] = points
            for column, result in enumerate(results):
                axis = axes[row][column]
                for other in results:  # the other strategies, thin and grey, for reference
                    if other is not result and id(other) in curves:
                        xs, ys = zip(*curves[id(other)])
                        axis.plot(xs, ys, color="0.75", linewidth=0.9, zorder=1)
                if id(result) in curves:
                    xs, ys = zip(*curves[id(result)])
                    axis.plot(xs, ys, marker="o", markersize=3.5, linewidth=1.8, color=colours[column], zorder=3)
                    bands = turn_bands(_band_rows(rows_of[id(result)], key))
                    if bands:
                        axis.fill_between(
                            [b.turn for b in bands],
                            [b.low for b in bands],
                            [b.high for b in bands],
                            color=colours[column],
                            alpha=0.2,
                            linewidth=0,
                            zorder=2,
                        )
                    drawn = True
                _mark_switch(axis, switches, label=row == 0 and column == 0)
                if row == 0:
                    axis.set_title(f"history={result.history}", fontsize=10)
                if column == 0:
                    axis.set_ylabel(pretty_name(key))
                if row == len(TURN_FAMILIES) - 1:
                    axis.set_xlabel("turn")
                axis.set_ylim(0, 1.02)
                axis.grid(alpha=0.3)
        if not drawn:
            raise MtrbenchError(
                f"{task} / {model}: no per-turn values for k={k} (available cutoffs: {first.settings.get('k_values')})"
            )
        turns = first.breakdowns["turn"]
        counts = ", ".join(f"{t}: {row.get('n', '?')}" for t, row in sorted(turns.items(), key=lambda x: int(x[0])))
        switch_note = (
            "dashed: topic switch after turn "
            + ", ".join(f"{t} ({c} conversations)" for t, c in sorted(switches.items()))
            if switches
            else "topic switch: none recorded for this task (or the task is not loadable here)"
        )
        title = (
            f"{task} \u00b7 {short_model(model)} \u00b7 truncate={first.settings.get('truncate')}: mean per turn; "
            f"shaded: 95% bootstrap band over conversations; grey: the other strategies; {switch_note}; "
            f"queries per turn: {counts}"
        )
        figure.suptitle("\n".join(textwrap.wrap(title, width=int(14 * (2.7 * n + 1.2)))), fontsize=9)
        name = unique_stem(safe_name(f"{task}__{short_model(model)}__turns_at_{k}"), names_used, "__")
        written.append(save_png(figure, Path(output_dir) / f"{name}.png"))
    return written
