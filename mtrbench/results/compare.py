"""Read per-query metrics back from result files for paired comparisons."""

from __future__ import annotations

from pathlib import Path

from mtrbench.infra.errors import DataError, MtrbenchError
from mtrbench.results.documents import read_json
from mtrbench.results.result import Result


def load_per_query(result_json: str | Path) -> tuple[str, dict[str, dict[str, float]]]:
    """(label, qid -> metric -> value) from an ``mtrbench eval`` result JSON or a ``score --output`` JSON."""
    path = Path(result_json)
    if not path.is_file():
        raise MtrbenchError(f"result file {path} does not exist")
    document = read_json(path)
    if isinstance(document, dict) and "per_query" in document:  # mtrbench score --output
        per_query = document["per_query"]
        if not isinstance(per_query, dict) or not all(isinstance(v, dict) for v in per_query.values()):
            raise DataError(f"{path}: per_query must map each query id to its metrics")
        return Path(str(document.get("run") or path.name)).name, per_query
    try:
        result = Result.from_document(document, path)
    except DataError as exc:
        raise DataError(f"{exc} (no per-query file recorded)") from None
    label = f"{result.model_name} ({result.history})"
    return label, result.per_query_values()
