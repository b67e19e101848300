"""The results JSON of ``mtrbench judge run`` and its console tables."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from mtrbench import __version__
from mtrbench.data.model import TaskData
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.numeric import json_text

PER_TURN_ROWS_SHOWN = 40


def write_scores(
    path: Path,
    task: TaskData,
    generations_file: str,
    scores,
    outcome,
    alignment,
    argv: Sequence[str] | None = None,
    ppi: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``ppi``: the judge's mean corrected by human labels (``--human-labels``), written as ``judge_ppi``."""
    payload = scores_payload(task, generations_file, scores, outcome, alignment, argv)
    if ppi is not None:
        payload["judge_ppi"] = ppi
    atomic_write_text(path, json_text(payload, path=path, indent=2, ensure_ascii=False) + "\n")
    return payload


def scores_payload(
    task: TaskData, generations_file: str, scores, outcome, alignment, argv: Sequence[str] | None = None
) -> dict[str, Any]:
    """Reference-measure means, the judge's summary, RAGAlign and a row per turn, as one JSON document."""
    per_turn: dict[str, dict[str, Any]] = {}
    payload: dict[str, Any] = {
        "mtrbench_version": __version__,
        "task": task.name,
        "split": task.split,
        "generations": str(generations_file),
        "command": list(argv or []),
    }
    if scores is not None:
        ev = scores.evaluation
        payload["measures"] = {
            "means": scores.means(),
            "labels": ev.labels(),
            "turns_scored": len(scores.scored),
            "relevance_level": ev.relevance_level,
            "notes": dict(scores.notes),
        }
        for qid in scores.scored:
            per_turn.setdefault(qid, {}).update(ev.per_query[qid])
    if outcome is not None:
        payload["judge"] = outcome.summary
        field = "rating" if outcome.run.mode == "rating" else "verdict"
        for t in outcome.run.turns:
            row = per_turn.setdefault(t.item.qid, {})
            row[field] = t.value if t.ok else None
            if not t.ok:
                row[f"{field}_error"] = t.error
    if alignment is not None:
        payload["ragalign"] = alignment
    payload["per_turn"] = per_turn
    return payload


def print_per_turn(console: Console, title: str, scores, outcome) -> None:
    rows: dict[str, dict[str, str]] = {}
    columns: list[str] = []
    if scores is not None:
        labels = scores.evaluation.labels()
        columns += [labels[k] for k in scores.evaluation.metric_keys]
        for qid in scores.scored:
            rows[qid] = {labels[k]: f"{v:.4f}" for k, v in scores.evaluation.per_query[qid].items()}
    if outcome is not None:
        name = "rating" if outcome.run.mode == "rating" else "verdict"
        columns.append(name)
        for t in outcome.run.turns:
            rows.setdefault(t.item.qid, {})[name] = (
                "failed"
                if not t.ok
                else (f"{t.value:g}" if name == "rating" else ("correct" if t.value else "incorrect"))
            )
    from mtrbench.results.table import compact_table, print_titled  # deferred: loads pytrec_eval

    table = compact_table()
    table.add_column("qid", no_wrap=True)
    for column in columns:
        table.add_column(column, justify="right")
    for qid, row in list(rows.items())[:PER_TURN_ROWS_SHOWN]:
        table.add_row(qid, *(row.get(c, "-") for c in columns))
    print_titled(
        console,
        f"{title}: per turn"
        + (f" (first {PER_TURN_ROWS_SHOWN} of {len(rows)})" if len(rows) > PER_TURN_ROWS_SHOWN else ""),
        table,
    )


def print_rad_table(console: Console, title: str, table_data: dict[str, dict[str, float]]) -> None:
    categories = list(dict.fromkeys(c for scores in table_data.values() for c in scores if c != "average"))
    from mtrbench.results.table import compact_table, print_titled  # deferred: loads pytrec_eval

    table = compact_table()
    table.add_column("model", no_wrap=True)
    for c in [*categories, "average"]:
        table.add_column(c, justify="right")
    for model, scores in table_data.items():
        table.add_row(model, *(f"{scores[c]:.3f}" if c in scores else "-" for c in [*categories, "average"]))
    print_titled(console, title, table)
