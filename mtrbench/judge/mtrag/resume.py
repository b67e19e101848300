"""The algorithmic metrics with a log, so that a killed run does not compute BERTScore again.

Tasks are scored in chunks; each chunk's values are appended to ``algorithmic.jsonl`` with a key that hashes
everything they depend on (answer, targets, passages, metrics asked, BERTScore settings), so a rerun takes a
task from the log only when nothing it depends on changed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from mtrbench.formats.lines import read_numbered_log_records
from mtrbench.formats.mtrag_eval import MtragTask
from mtrbench.infra.atomic import LineAppender
from mtrbench.infra.errors import DataError
from mtrbench.infra.locking import held_lock, lock_path_for
from mtrbench.infra.numeric import finite, json_text
from mtrbench.judge.mtrag.algorithmic import Metrics, algorithmic_metrics
from mtrbench.judge.mtrag.bertscore import BertScorer

LOG_NAME = "algorithmic.jsonl"
CHUNK = 32


def input_key(task: MtragTask, metrics: Sequence[str], settings: dict[str, object] | None) -> str:
    payload = [
        task.prediction,
        [t.text for t in task.targets],
        [c.text for c in task.contexts],
        sorted(metrics),
        settings,
    ]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False, sort_keys=True).encode()).hexdigest()[:20]


def _checked_metrics(metrics: dict[str, object], where: str) -> Metrics:
    """A logged task's metrics as :func:`algorithmic_metrics` gives them: per name a list of finite numbers (None
    where a passage has no score). A NaN, an infinity or a string there would reach the summary's means: one error
    naming the line."""
    checked: Metrics = {}
    for name, values in metrics.items():
        if not isinstance(values, list):
            raise DataError(f"{where}: metric {name} is {values!r}, not a list of numbers")
        for value in values:
            if isinstance(value, str):
                raise DataError(f"{where}: metric {name} value {value!r} is not a number")
            if value is not None:
                finite(value, where, f"metric {name} value")
        checked[name] = values
    return checked


def _logged(path: Path) -> dict[tuple[str, str], Metrics]:
    records, _ = read_numbered_log_records(path)
    return {
        (r["task_id"], r["key"]): _checked_metrics(r["metrics"], f"{path}:{number}")
        for number, r in records
        if isinstance(r.get("task_id"), str) and isinstance(r.get("key"), str) and isinstance(r.get("metrics"), dict)
    }


def pending_tasks(
    tasks: Sequence[MtragTask], metrics: Sequence[str], settings: dict[str, object] | None, output_dir: Path
) -> list[MtragTask]:
    done = _logged(Path(output_dir) / LOG_NAME)
    return [t for t in tasks if (t.task_id, input_key(t, metrics, settings)) not in done]


def algorithmic_with_log(
    tasks: Sequence[MtragTask],
    metrics: Sequence[str],
    scorer: BertScorer | None,
    settings: dict[str, object] | None,
    output_dir: Path,
) -> list[Metrics]:
    """Per task (in order), its algorithmic metrics: from the log when its inputs are unchanged, else computed
    (BERTScore batched per chunk of tasks) and appended to the log."""
    path = Path(output_dir) / LOG_NAME
    keys = [input_key(t, metrics, settings) for t in tasks]
    with held_lock(lock_path_for(path), purpose=f"MTRAG metrics log {path}"):
        done = _logged(path)
        pending = [(t, k) for t, k in zip(tasks, keys) if (t.task_id, k) not in done]
        if pending:
            cut_short = path.is_file() and path.stat().st_size > 0 and not path.read_bytes().endswith(b"\n")
            with LineAppender(path) as handle:
                if cut_short:  # a kill mid-write left half a line: start ours on a fresh one
                    handle.write("\n")
                for start in range(0, len(pending), CHUNK):
                    chunk = pending[start : start + CHUNK]
                    for (task, key), values in zip(chunk, algorithmic_metrics([t for t, _ in chunk], metrics, scorer)):
                        done[(task.task_id, key)] = values
                        record = {"task_id": task.task_id, "key": key, "metrics": values}
                        handle.write(json_text(record, path=path) + "\n")
    return [{name: list(values) for name, values in done[(t.task_id, k)].items()} for t, k in zip(tasks, keys)]
