"""Whether to (re-)evaluate a result that may exist already: mteb's overwrite strategies.

Mirrors ``mteb.evaluate(overwrite_strategy=...)`` (mteb 2.x):

* ``always``: evaluate and replace any existing file;
* ``only-missing`` (default, as mteb): skip a finished result with the same settings; evaluate what is
  missing, and replace a file made with other settings (mteb re-runs results it cannot merge);
* ``never``: skip a finished result with the same settings, evaluate what is missing, and refuse to
  replace a file made with other settings (mteb raises rather than overwrite).

A result file is written last and atomically, so one that parses is finished, except one whose model-written
history failed on some queries (``settings.rewriter.failures``): it is evaluated again, and only the failed
requests are asked (the others come from the response cache). "Same settings" is
the ``mtrbench.settings`` block without what only changes speed (device, batch size, ...); the
decision is taken before the task is loaded, so the dataset revision is compared only by callers
that pass it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtrbench.infra.errors import MtrbenchError

OVERWRITE_STRATEGIES = ("always", "only-missing", "never")
DEFAULT_OVERWRITE = "only-missing"
# Retriever settings that change speed or memory, never a score (as the leaderboard's identity ignores them),
# and what the corpus decides once indexed (the child count of parent-child retrieval: the chunking spec is kept).
EXECUTION_ONLY = ("device", "batch_size", "token_budget", "packed", "embedding_cache", "search_execution")
CORPUS_DERIVED = ("children",)
REWRITER_IDENTITY = (
    "kind",
    "model",
    "base_url",
    "prompt_hash",
    "name",
    "temperature",
)  # rewrite:llm / summary:llm; python


@dataclass(frozen=True)
class Decision:
    evaluate: bool
    reason: str  # "missing", "forced", "finished", "incomplete", "settings differ", "unreadable"


def _without(value: Any, keys: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        return {k: _without(v, keys) for k, v in value.items() if k not in keys}
    return value


def comparable_settings(settings: dict[str, Any]) -> dict[str, Any]:
    out = dict(settings)
    out.setdefault("protocol", "trec_eval")  # a result written before protocols were recorded
    if isinstance(out.get("retriever"), dict):  # nested too: hybrid legs, the children retriever
        out["retriever"] = _without(out["retriever"], EXECUTION_ONLY + CORPUS_DERIVED)
    if isinstance(out.get("rewriter"), dict):  # who wrote the rewrites decides; request and cache counts do not
        out["rewriter"] = {k: v for k, v in out["rewriter"].items() if k in REWRITER_IDENTITY}
    return json.loads(json.dumps(out))  # tuples -> lists, as they come back from a file


def _rewriter_failures(settings: dict[str, Any]) -> int:
    rewriter = settings.get("rewriter")
    failures = rewriter.get("failures") if isinstance(rewriter, dict) else None
    return failures if isinstance(failures, int) and not isinstance(failures, bool) else 0


def _existing_settings(path: Path) -> tuple[dict[str, Any], str | None] | None:
    """The recorded settings and dataset revision; None when the file cannot be read or records no settings.

    Only the settings are needed here, so the result is wrapped without :meth:`Result.load`'s full check."""
    from mtrbench.results.documents import read_json
    from mtrbench.results.result import Result

    try:
        result = Result(read_json(path), path)
        if not result.has_settings:
            return None
        return result.settings, result.dataset_revision
    except (MtrbenchError, KeyError, TypeError, AttributeError):
        return None


def decide(path: Path, settings: dict[str, Any], strategy: str, dataset_revision: str | None = None) -> Decision:
    """``dataset_revision``: compared only when given (it is known once the task is loaded)."""
    if strategy not in OVERWRITE_STRATEGIES:
        raise MtrbenchError(f"--overwrite-strategy must be one of {', '.join(OVERWRITE_STRATEGIES)}, got '{strategy}'")
    if not path.exists():
        return Decision(True, "missing")
    if strategy == "always":
        return Decision(True, "forced")
    existing = _existing_settings(path)
    if existing is not None and _rewriter_failures(existing[0]):
        return Decision(True, "incomplete")  # its rewriter failed on some queries: a re-run asks only those
    same = (
        existing is not None
        and comparable_settings(existing[0]) == comparable_settings(settings)
        and (dataset_revision is None or existing[1] == dataset_revision)
    )
    if same:
        return Decision(False, "finished")
    reason = "unreadable" if existing is None else "settings differ"
    if strategy == "never":
        raise MtrbenchError(
            f"{path}: a result with other settings exists ({reason}); --overwrite-strategy never "
            f"does not replace it (use only-missing or always, or another --output-dir)"
        )
    return Decision(True, reason)
