"""Human scores for the audit's instances, and the Pearson correlation of a judge with them.

File format (``--human-scores``), JSONL or CSV (by the ``.csv`` suffix), instance ids as in the audit's
``instances.jsonl``:

* long: one score per record, ``{"instance_id": "c1_4::orrin-open", "dimension": "alignment", "score": 4}``
  (CSV header ``instance_id,dimension,score``);
* wide: dimensions as columns, ``{"instance_id": "c1_4", "faithfulness": 5, "quality": 4}``
  (CSV header ``instance_id,faithfulness,quality``; an empty cell = not scored).

Other keys (e.g. ``annotator``) are ignored. Several scores for the same (dimension, instance), such
as one per annotator, are averaged before correlating, as MTR-SUITE App. A.4 averages its annotators.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from mtrbench.audit.plan import DIMENSIONS
from mtrbench.formats.records import read_records
from mtrbench.infra.errors import DataError
from mtrbench.infra.numeric import finite

HumanScores = dict[str, dict[str, float]]  # dimension -> instance_id -> mean human score


def _number(value, where: str) -> float | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise DataError(f"{where}: score {value!r} is not a number") from None
    if math.isnan(number):  # an empty spreadsheet cell, as pandas writes one: no score
        return None
    return finite(value, where, "score")  # an infinity is refused


def read_human_scores(path: str | Path) -> HumanScores:
    path = Path(path)
    if not path.is_file():
        raise DataError(f"--human-scores file {path} does not exist")
    collected: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for where, row in read_records(path):
        instance = row.get("instance_id")
        if instance in (None, ""):
            raise DataError(f"{where}: needs an 'instance_id' (see instances.jsonl in the audit folder)")
        if "dimension" in row:
            dimension = str(row["dimension"]).strip()
            if dimension not in DIMENSIONS:
                raise DataError(f"{where}: unknown dimension '{dimension}' ({', '.join(DIMENSIONS)})")
            pairs = [(dimension, row.get("score"))]
        else:
            pairs = [(d, row[d]) for d in DIMENSIONS if d in row]
            if not pairs:
                raise DataError(
                    f"{where}: needs 'dimension' and 'score', or a column per dimension ({', '.join(DIMENSIONS)})"
                )
        for dimension, value in pairs:
            score = _number(value, where)
            if score is not None:
                collected[dimension][str(instance)].append(score)
    if not collected:
        raise DataError(f"{path}: no human score found")
    return {d: {i: sum(v) / len(v) for i, v in by_instance.items()} for d, by_instance in collected.items()}


@dataclass
class Correlation:
    n: int
    pearson: float | None
    p_value: float | None
    note: str | None = None

    def as_dict(self) -> dict:
        return {"n": self.n, "pearson": self.pearson, "p_value": self.p_value, "note": self.note}


def pearson(judge: dict[str, float], human: dict[str, float]) -> Correlation:
    """Pearson r over the instances both scored (scipy.stats.pearsonr)."""
    common = sorted(set(judge) & set(human))
    x = [judge[i] for i in common]
    y = [human[i] for i in common]
    if len(common) < 3:
        return Correlation(len(common), None, None, "fewer than 3 instances scored by both")
    if len(set(x)) < 2 or len(set(y)) < 2:
        return Correlation(len(common), None, None, "constant scores: correlation undefined")
    from scipy.stats import pearsonr

    result = pearsonr(x, y)
    return Correlation(len(common), float(result.statistic), float(result.pvalue))
