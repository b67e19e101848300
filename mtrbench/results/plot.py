"""PNG figures (matplotlib, no display needed): per-turn curves of results by history strategy."""

from __future__ import annotations

import io
from pathlib import Path
from mtrbench.infra.atomic import atomic_write_bytes
from mtrbench.infra.errors import DataError, MtrbenchError
from mtrbench.analyses.turn_bands import turn_bands
from mtrbench.results.documents import find_inputs
from mtrbench.results.result import QueryScores, Result
from mtrbench.results.labels import canonical, short_model
from mtrbench.measures import label as pretty_name
from mtrbench.results.writer import safe_name

TURN_FAMILIES = ("recall", "ndcg")
DPI = 110


def new_figure(width: float, height: float):
    # A bare Figure draws with the Agg canvas on savefig: no pyplot state, no display backend.
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


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


def plot_turn_curves(paths: list[str | Path], output_dir: Path, k: int = 10) -> list[Path]:
    """One figure per (task, model, settings): Recall@k and nDCG@k per turn, a line per history strategy,
    shaded by its 95% bootstrap band over conversations (from the per-query file, when it is there)."""
    written = []
    names_used: set[str] = set()
    for results in _curve_groups(paths).values():
        rows_of = {id(result): _rows_or_none(result) for result in results}
        first = results[0]
        task, model = first.task_name, first.model_name
        figure = new_figure(11, 4.2)
        axes = figure.subplots(1, len(TURN_FAMILIES), sharex=True)
        drawn = False
        for axis, family in zip(axes, TURN_FAMILIES):
            key = f"{family}_at_{k}"
            for result in sorted(results, key=lambda r: r.history or ""):
                turns = result.breakdowns["turn"]
                points = sorted((int(t), row[key]) for t, row in turns.items() if key in row)
                if points:
                    xs, ys = zip(*points)
                    line, = axis.plot(xs, ys, marker="o", linewidth=1.8, label=result.history)
                    rows = rows_of[id(result)]
                    if rows:
                        bands = turn_bands((r.conversation_id, r.turn_id, r.values[key]) for r in rows
                                           if key in r.values and isinstance(r.turn_id, int)
                                           and r.conversation_id is not None)
                        axis.fill_between([b.turn for b in bands], [b.low for b in bands], [b.high for b in bands],
                                          color=line.get_color(), alpha=0.15, linewidth=0)
                    drawn = True
            axis.set_title(pretty_name(key))
            axis.set_xlabel("turn")
            axis.set_ylim(0, 1.02)
            axis.grid(alpha=0.3)
        if not drawn:
            raise MtrbenchError(f"{task} / {model}: no per-turn values for k={k} (available cutoffs: "
                                f"{first.settings.get('k_values')})")
        turns = first.breakdowns["turn"]
        counts = ", ".join(f"{t}: {row.get('n', '?')}" for t, row in sorted(turns.items(), key=lambda x: int(x[0])))
        axes[0].set_ylabel("mean over the turn's queries")
        axes[-1].legend(title="history", fontsize=9, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
        figure.suptitle(f"{task} · {short_model(model)} · truncate={first.settings.get('truncate')}\n"
                        f"queries per turn: {counts}; shaded: 95% bootstrap band over conversations", fontsize=10)
        stem = safe_name(f"{task}__{short_model(model)}__turns_at_{k}")
        name, n = stem, 1
        while name in names_used:
            n += 1
            name = f"{stem}__{n}"
        names_used.add(name)
        written.append(save_png(figure, Path(output_dir) / f"{name}.png"))
    return written
