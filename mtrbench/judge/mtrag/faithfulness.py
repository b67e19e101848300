"""RL_F: RAGAS faithfulness (ragas 0.3, which the official ``requirements.txt`` pins), with the whole
conversation as the question, as ``run_ragas_judges_*`` build it.

Step 1 asks for the answer's statements; none gives NaN (ragas returns ``np.nan`` before step 2). Step 2 asks for
one verdict per statement against the contexts joined by newlines; the score is the number of truthy verdicts
over the number of verdicts returned (ragas's ``_compute_score``), NaN when none is returned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mtrbench.llm.extract import ExtractionError, extract_json


def parse_statements(reply: str) -> list[str]:
    data = extract_json(reply)
    statements = data.get("statements") if isinstance(data, dict) else data
    if not isinstance(statements, list) or not all(isinstance(s, str) for s in statements):
        raise ExtractionError('expected {"statements": [strings]}')
    return [s for s in statements if s.strip()]


def _verdict(entry: object) -> int:
    value = entry.get("verdict") if isinstance(entry, dict) else None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    if isinstance(value, str) and value.strip() in ("0", "1"):
        return int(value.strip())
    raise ExtractionError("each statement needs a verdict 0 or 1")


def parse_verdicts(reply: str) -> list[int]:
    data = extract_json(reply)
    entries = data.get("statements") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise ExtractionError('expected {"statements": [{"verdict": 0|1, ...}]}')
    return [_verdict(e) for e in entries]


def faithfulness_score(verdicts: Sequence[int] | None) -> float:
    """Supported statements / verdicts; NaN for no statement (``None``) or no verdict."""
    if not verdicts:
        return math.nan
    return sum(1 for v in verdicts if v) / len(verdicts)
