"""RAGAlign (DREAM §5.2, App. J.3): does retrieval success line up with generation success?

Binary: RAGAlign@k = (1/N) sum_i 1[R_i == G_i] for a binary retrieval metric R (Hit@k by default)
and a binary generation outcome G per query. Continuous R (e.g. nDCG@k): the point-biserial
correlation between R and G, with its p-value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mtrbench.errors import MtrbenchError

_TRUE = {"1", "true", "yes", "correct"}
_FALSE = {"0", "false", "no", "incorrect"}


def _binary(value, where: str) -> int:
    text = str(value).strip().lower()
    if text in _TRUE or value is True:
        return 1
    if text in _FALSE or value is False:
        return 0
    raise MtrbenchError(f"{where}: generation outcome must be binary (0/1, true/false), got {value!r}")


def read_generation_judgments(path: str | Path) -> dict[str, int]:
    """JSONL ``{"qid": ..., "label": 0|1}`` (``correct`` or ``judgment`` also accepted) or TSV ``qid<TAB>label``."""
    path = Path(path)
    if not path.is_file():
        raise MtrbenchError(f"generation judgments file {path} does not exist")
    out: dict[str, int] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        if line.lstrip().startswith("{"):
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise MtrbenchError(f"{where}: not valid JSON ({exc.msg})") from None
            key = next((k for k in ("label", "correct", "judgment") if k in row), None)
            if "qid" not in row or key is None:
                raise MtrbenchError(f"{where}: needs 'qid' and 'label' (or 'correct'/'judgment')")
            qid, value = str(row["qid"]), row[key]
        else:
            parts = line.split()
            if len(parts) != 2:
                raise MtrbenchError(f"{where}: a TSV line needs 'qid label'")
            qid, value = parts
        if qid in out:
            raise MtrbenchError(f"{where}: query '{qid}' judged twice")
        out[qid] = _binary(value, where)
    return out


@dataclass
class RagAlign:
    metric: str
    value: float  # agreement rate (binary) or point-biserial r
    n: int
    p_value: float | None = None
    missing_generation: int = 0  # evaluated queries without a generation judgment (left out)

    def as_dict(self) -> dict:
        return {"metric": self.metric, "value": self.value, "n": self.n, "p_value": self.p_value,
                "missing_generation": self.missing_generation}


def _paired(retrieval: dict[str, float], generation: dict[str, int]):
    qids = [q for q in retrieval if q in generation]
    return qids, len(retrieval) - len(qids)


def ragalign_binary(retrieval: dict[str, float], generation: dict[str, int], metric: str) -> RagAlign:
    qids, missing = _paired(retrieval, generation)
    if not qids:
        raise MtrbenchError("RAGAlign: no evaluated query has a generation judgment")
    for q in qids:
        if retrieval[q] not in (0, 1, 0.0, 1.0):
            raise MtrbenchError(f"RAGAlign binary needs a binary retrieval metric; {metric} is {retrieval[q]} for {q}")
    agree = sum(1 for q in qids if int(retrieval[q]) == generation[q])
    return RagAlign(metric=metric, value=agree / len(qids), n=len(qids), missing_generation=missing)


def ragalign_pointbiserial(retrieval: dict[str, float], generation: dict[str, int], metric: str) -> RagAlign:
    from scipy import stats

    qids, missing = _paired(retrieval, generation)
    labels = [generation[q] for q in qids]
    if len(set(labels)) < 2:
        raise MtrbenchError("RAGAlign point-biserial needs both successful and failed generations")
    result = stats.pointbiserialr(labels, [retrieval[q] for q in qids])
    return RagAlign(metric=metric, value=float(result.statistic), n=len(qids), p_value=float(result.pvalue),
                    missing_generation=missing)
