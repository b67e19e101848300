"""Read per-query metrics back from result files for paired comparisons."""

from __future__ import annotations

import json
from pathlib import Path

from mtrbench.infra.errors import MtrbenchError


def load_per_query(result_json: str | Path) -> tuple[str, dict[str, dict[str, float]]]:
    """(label, qid -> metric -> value) from an ``mtrbench eval`` result JSON or a ``score --output`` JSON."""
    path = Path(result_json)
    if not path.is_file():
        raise MtrbenchError(f"result file {path} does not exist")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise MtrbenchError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if "per_query" in doc:  # mtrbench score --output
        return Path(doc.get("run", path.name)).name, doc["per_query"]
    meta = doc.get("mtrbench")
    if not meta or "files" not in meta:
        raise MtrbenchError(f"{path}: not an mtrbench result (no per-query file recorded)")
    per_query_path = path.with_name(meta["files"]["per_query"])
    if not per_query_path.is_file():
        raise MtrbenchError(f"{path}: its per-query file {per_query_path} is missing")
    rows = {}
    for n, line in enumerate(per_query_path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                raise MtrbenchError(f"{per_query_path}:{n}: not valid JSON") from None
            rows[row["qid"]] = {k: v for k, v in row.items() if isinstance(v, (int, float)) and k != "turn_id"}
    label = f"{meta['model']['name']} ({meta['settings']['history']})"
    return label, rows
