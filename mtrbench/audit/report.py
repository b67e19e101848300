"""Audit results from the log: aggregates per dimension and judge, hole candidates, correlation with
humans, the terminal table (printed by the CLI)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.table import Table

from mtrbench.audit.human import Correlation, HumanScores, pearson
from mtrbench.audit.log import ItemKey
from mtrbench.audit.plan import COMPLETENESS, AuditItem
from mtrbench.formats.qrels import Qrels, format_qrels
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.numeric import json_lines
from mtrbench.results.table import compact_table

ENSEMBLE = "ensemble"  # per-instance mean over the judges that answered (MTR-SUITE averages its judges)
HOLES_QRELS = "hole_candidates.qrels"
HOLES_JSONL = "hole_candidates.jsonl"
TABLE_LEGEND = "(ratings 1-5; completeness = share of picks on the gold document)"  # the line under the title


@dataclass
class Stats:
    n: int  # instances with a parsed score
    mean: float | None
    std: float | None  # sample standard deviation (n - 1)
    failures: int  # instances whose every reply so far was unusable (HTTP error, unparseable)
    missing: int  # instances not asked yet (e.g. an interrupted run)

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "mean": self.mean, "std": self.std, "failures": self.failures, "missing": self.missing}


def _stats(values: list[float], failures: int, missing: int) -> Stats:
    mean = statistics.fmean(values) if values else None
    std = statistics.stdev(values) if len(values) > 1 else None
    return Stats(len(values), mean, std, failures, missing)


def judge_scores(items: list[AuditItem], latest: dict[ItemKey, dict], judge: str) -> dict[str, dict[str, float]]:
    """dimension -> instance_id -> score, for the items this judge answered usably."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for item in items:
        record = latest.get((item.dimension, item.instance_id, judge))
        if record and record.get("ok"):
            out[item.dimension][item.instance_id] = float(record["score"])
    return out


def aggregate(
    items: list[AuditItem],
    dimensions: list[str],
    latest: dict[str, dict[ItemKey, dict]],
) -> tuple[dict[str, dict[str, Stats]], dict[str, dict[str, dict[str, float]]]]:
    """(dimension -> judge -> Stats, dimension -> judge -> instance -> score); ``latest`` is per judge."""
    judges = list(latest)
    stats: dict[str, dict[str, Stats]] = {d: {} for d in dimensions}
    scores: dict[str, dict[str, dict[str, float]]] = {d: {} for d in dimensions}
    for judge in judges:
        per_dimension = judge_scores(items, latest[judge], judge)
        for d in dimensions:
            planned = [i for i in items if i.dimension == d]
            answered = [latest[judge].get((d, i.instance_id, judge)) for i in planned]
            failures = sum(1 for r in answered if r is not None and not r.get("ok"))
            missing = sum(1 for r in answered if r is None)
            scores[d][judge] = per_dimension.get(d, {})
            stats[d][judge] = _stats(list(scores[d][judge].values()), failures, missing)
    if len(judges) > 1:
        for d in dimensions:
            by_instance: dict[str, list[float]] = defaultdict(list)
            for judge in judges:
                for instance, value in scores[d][judge].items():
                    by_instance[instance].append(value)
            ensemble = {i: statistics.fmean(v) for i, v in by_instance.items()}
            planned = {i.instance_id for i in items if i.dimension == d}
            unscored = planned - set(ensemble)
            tried = {i for i in unscored if any((d, i, j) in latest[j] for j in judges)}
            scores[d][ENSEMBLE] = ensemble
            stats[d][ENSEMBLE] = _stats(list(ensemble.values()), len(tried), len(unscored - tried))
    return stats, scores


def correlations(
    scores: dict[str, dict[str, dict[str, float]]], human: HumanScores
) -> dict[str, dict[str, Correlation]]:
    return {
        d: {judge: pearson(values, human[d]) for judge, values in by_judge.items()}
        for d, by_judge in scores.items()
        if d in human
    }


def hole_candidates(items: list[AuditItem], latest: dict[str, dict[ItemKey, dict]]) -> list[dict[str, Any]]:
    """Completeness picks that landed on a non-gold document, one row per (query, document, judge)."""
    rows = []
    for judge, records in latest.items():
        for item in items:
            if item.dimension != COMPLETENESS:
                continue
            record = records.get((COMPLETENESS, item.instance_id, judge))
            if record and record.get("ok") and not record["on_gold"]:
                rows.append(
                    {
                        "qid": item.qid,
                        "doc_id": record["picked_doc"],
                        "judge": judge,
                        "instance_id": item.instance_id,
                        "gold_doc": item.gold_doc,
                        "picked_position": record["picked_position"],
                        "gold_position": item.gold_position,
                    }
                )
    return rows


def write_holes(output_dir: Path, rows: list[dict[str, Any]]) -> tuple[Path, Path]:
    """TREC qrels (``qid 0 docid 1``, one line per distinct query/document) and the per-judge JSONL."""
    holes: Qrels = {}
    for row in rows:
        holes.setdefault(row["qid"], {})[row["doc_id"]] = 1
    qrels_path, jsonl_path = output_dir / HOLES_QRELS, output_dir / HOLES_JSONL
    atomic_write_text(qrels_path, format_qrels(holes))
    atomic_write_text(jsonl_path, json_lines(rows, path=jsonl_path, ensure_ascii=False))
    return qrels_path, jsonl_path


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def results_table(stats: dict[str, dict[str, Stats]], correlation: dict[str, dict[str, Correlation]]) -> Table:
    """Mean, std, n, failures and missing per dimension and judge (and Pearson r when there are human scores)."""
    table = compact_table()
    table.add_column("dimension", no_wrap=True)
    table.add_column("judge", overflow="fold")
    for column in ("mean", "std", "n", "failed", "missing"):
        table.add_column(column, justify="right", no_wrap=True)
    if correlation:
        table.add_column("r (n)", justify="right", no_wrap=True)
    for dimension, by_judge in stats.items():
        for n, (judge, s) in enumerate(by_judge.items()):
            row = [
                dimension if n == 0 else "",
                judge,
                _fmt(s.mean),
                _fmt(s.std),
                str(s.n),
                str(s.failures),
                str(s.missing),
            ]
            if correlation:
                c = correlation.get(dimension, {}).get(judge)
                row.append("" if c is None else (f"{c.pearson:.3f} ({c.n})" if c.pearson is not None else f"- ({c.n})"))
            table.add_row(*row)
    return table
