"""Escalation to humans: the files they work from, and reading their labels back.

Every pair the two agents still disagreed on after the last round goes into ``escalations.jsonl``
and ``escalations.csv`` with the question, answers, passage and the whole debate. Humans fill the
``human_label`` column (yes / no, or a grade on the task's scale) and hand the file back with
``mtrbench assess TASK --humans FILE``.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtrbench.assess.dream import AGENTS
from mtrbench.assess.log import AssessmentLog, PairRecords
from mtrbench.assess.prompts import Case
from mtrbench.formats.records import read_records
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import DataError
from mtrbench.infra.numeric import json_lines


def escalation_rows(cases: list[tuple[Case, PairRecords]]) -> list[dict[str, Any]]:
    rows = []
    for case, records in cases:
        adjudication = records.adjudication if records.adjudication and records.adjudication["status"] == "ok" else None
        rows.append(
            {
                "qid": case.qid,
                "doc_id": case.doc_id,
                "query": case.query,
                "answers": list(case.answers),
                "document": case.document,
                "debate": records.debate["rounds"],
                "adjudicator": None
                if adjudication is None
                else {"judge": adjudication["judge"], **adjudication["verdict"]},
                "human_label": None if records.human is None else _label_text(records.human),
            }
        )
    return rows


def _label_text(human: dict[str, Any]) -> str:
    if human.get("grade") is not None:
        return str(human["grade"])
    return "yes" if human["label"] else "no"


def _agent_key(name: str) -> str:
    return name.lower().replace(" ", "_")


def csv_text(rows: list[dict[str, Any]]) -> str:
    n_rounds = max((len(r["debate"]) for r in rows), default=0)
    columns = ["qid", "doc_id", "query", "answers", "document"]
    for n in range(1, n_rounds + 1):
        for agent in AGENTS:
            columns += [f"round{n}_{_agent_key(agent.name)}_{part}" for part in ("label", "reason", "reference")]
    columns += ["adjudicator_label", "adjudicator_reason", "human_label"]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        flat = {
            "qid": row["qid"],
            "doc_id": row["doc_id"],
            "query": row["query"],
            "answers": "\n".join(row["answers"]),
            "document": row["document"],
            "adjudicator_label": row["adjudicator"]["response"] if row["adjudicator"] else "",
            "adjudicator_reason": row["adjudicator"]["reason"] if row["adjudicator"] else "",
            "human_label": row["human_label"] or "",
        }
        for rnd in row["debate"]:
            for agent in AGENTS:
                verdict = rnd[agent.name]
                prefix = f"round{rnd['round']}_{_agent_key(agent.name)}"
                flat[f"{prefix}_label"] = verdict["response"]
                flat[f"{prefix}_reason"] = verdict["reason"]
                flat[f"{prefix}_reference"] = "\n".join(verdict["reference"])
        writer.writerow(flat)
    return buffer.getvalue()


def write_escalations(rows: list[dict[str, Any]], jsonl_path: Path, csv_path: Path) -> None:
    atomic_write_text(jsonl_path, json_lines(rows, path=jsonl_path, ensure_ascii=False))
    atomic_write_text(csv_path, csv_text(rows))


@dataclass(frozen=True)
class HumanLabel:
    qid: str
    doc_id: str
    relevant: bool
    grade: int | None  # when the human gave a grade on the task's scale instead of yes/no


_WORDS = {
    "yes": True,
    "y": True,
    "true": True,
    "relevant": True,
    "no": False,
    "n": False,
    "false": False,
    "irrelevant": False,
    "not relevant": False,
}


def parse_human_label(value: Any, where: str) -> tuple[bool, int | None] | None:
    """(relevant, grade) for a filled label; None for a blank one."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        return value, None
    text = str(value).strip().lower()
    if text in _WORDS:
        return _WORDS[text], None
    try:
        grade = int(float(text))
    except ValueError:
        raise DataError(f"{where}: human label {value!r} is not yes/no or an integer grade") from None
    if grade < 0 or grade != float(text):
        raise DataError(f"{where}: human label {value!r} is not a grade (a non-negative integer)")
    return grade > 0, grade


def read_human_labels(path: str | Path) -> tuple[list[HumanLabel], Counter]:
    """Labels from a filled escalation file: CSV (qid, doc_id, human_label) or JSONL (human_label or label)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"--humans file {path} does not exist")
    counts: Counter = Counter()
    rows = read_records(path, required_columns={"qid", "doc_id"} if path.suffix.lower() == ".csv" else None)
    labels = []
    for where, record in rows:
        if "qid" not in record or "doc_id" not in record:
            raise DataError(f"{where}: needs qid and doc_id")
        value = record.get("human_label", record.get("label"))
        parsed = parse_human_label(value, where)
        if parsed is None:
            counts["rows without a human label yet"] += 1
            continue
        labels.append(HumanLabel(str(record["qid"]), str(record["doc_id"]), *parsed))
    return labels, counts


def merge_human_labels(
    path: str | Path,
    log: AssessmentLog,
    entries: dict[tuple[str, str], PairRecords],
    original: dict[str, dict[str, int]],
    warnings: Counter,
) -> None:
    """Log a human record for each new or changed label; a human label beats the agents and the adjudicator."""
    labels, counts = read_human_labels(path)
    warnings.update({f"--humans: {k}": v for k, v in counts.items()})
    for label in labels:
        key = (label.qid, label.doc_id)
        if label.doc_id in original.get(label.qid, {}):
            warnings["--humans: pairs the task already judges (ignored)"] += 1
            continue
        entry = entries.get(key)
        if entry is None:
            warnings["--humans: pairs never assessed here (ignored)"] += 1
            continue
        if (
            entry.human is not None
            and entry.human["label"] == label.relevant
            and entry.human.get("grade") == label.grade
        ):
            continue
        entry.human = {
            "kind": "human",
            "qid": label.qid,
            "doc_id": label.doc_id,
            "label": label.relevant,
            "grade": label.grade,
            "source": Path(path).name,
        }
        log.append(entry.human)
        warnings["--humans: labels merged"] += 1
