"""RAD-Bench's Table 2: per model, a score per scenario (category) and their average.

As in RAD-Bench's ``scripts/script_final_plots.py`` (SCHEMAS.md §8): score(model, category) is the mean over
turns t of the mean rating at turn t; the average is the plain mean of the category scores. Released judgment
files mark an unparsable rating with -1, which that script keeps; ``drop_unparsable`` leaves them out instead
(mtrbench's own judging never writes one: a failure is listed, not scored).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mtrbench.data.loaders.rad_bench import CATEGORIES, RadJudgment, load_rad_bench
from mtrbench.infra.errors import DataError

UNPARSABLE = -1


@dataclass(frozen=True)
class Rated:
    model: str
    category: str
    turn: int
    score: float


def scenario_table(rows: Iterable[Rated]) -> dict[str, dict[str, float]]:
    """model -> {category: mean over turns of the per-turn mean, ..., "average": mean of the categories}."""
    cells: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in rows:
        cells[r.model][r.category][r.turn].append(float(r.score))
    table: dict[str, dict[str, float]] = {}
    for model in sorted(cells):
        by_category = cells[model]
        order = [c for c in CATEGORIES if c in by_category] + sorted(set(by_category) - set(CATEGORIES))
        scores = {c: _mean([_mean(by_category[c][t]) for t in sorted(by_category[c])]) for c in order}
        scores["average"] = _mean(list(scores.values()))
        table[model] = scores
    return table


def turn_means(rows: Iterable[Rated]) -> dict[str, dict[str, dict[int, float]]]:
    """model -> category -> turn -> mean rating (the cells Table 2 averages)."""
    cells: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in rows:
        cells[r.model][r.category][r.turn].append(float(r.score))
    return {
        m: {c: {t: _mean(v) for t, v in sorted(by_turn.items())} for c, by_turn in by_cat.items()}
        for m, by_cat in cells.items()
    }


@dataclass
class RadTable:
    source: str  # judgment file name
    table: dict[str, dict[str, float]]
    turn_means: dict[str, dict[str, dict[int, float]]]
    judgments: int  # records read
    unparsable: dict[str, int] = field(default_factory=dict)  # model -> records with score -1
    unparsable_kept: bool = True

    def as_dict(self) -> dict:
        return {
            "source": self.source,
            "table": self.table,
            "turn_means": {
                m: {c: {str(t): v for t, v in ts.items()} for c, ts in cs.items()} for m, cs in self.turn_means.items()
            },
            "judgments": self.judgments,
            "unparsable": self.unparsable,
            "unparsable_ratings": ("kept as -1, as RAD-Bench's script does" if self.unparsable_kept else "left out"),
        }


def rad_bench_tables(path: str | Path, drop_unparsable: bool = False) -> list[RadTable]:
    """One table per judgment file: ``path`` is a judgment JSONL file, or a RAD-Bench folder (its
    ``model_judgment/*.jsonl`` and top-level ``*judg*.jsonl``)."""
    path = Path(path).expanduser()
    if path.is_file():
        bench = load_rad_bench(path.parent, judgments=[path])
    elif path.is_dir():
        bench = load_rad_bench(path)
    else:
        raise DataError(f"judgments {path} does not exist")
    if not bench.judgments:
        raise DataError(f"{path}: no RAD-Bench judgment records found")
    out = []
    for source in bench.judgment_sources:
        records: list[RadJudgment] = [j for j in bench.judgments if j.source == source]
        unparsable: dict[str, int] = defaultdict(int)
        for j in records:
            if j.score == UNPARSABLE:
                unparsable[j.model] += 1
        rows = [
            Rated(j.model, j.category, j.turn, j.score)
            for j in records
            if not (drop_unparsable and j.score == UNPARSABLE)
        ]
        out.append(
            RadTable(
                source=source,
                table=scenario_table(rows),
                turn_means=turn_means(rows),
                judgments=len(records),
                unparsable=dict(unparsable),
                unparsable_kept=not drop_unparsable,
            )
        )
    return out


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)
