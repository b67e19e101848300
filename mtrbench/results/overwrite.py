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
the identity of the ``mtrbench.settings`` block (``results/settings.py``: without what only changes speed, such as
device and batch size); the decision is taken before the task is loaded, so the dataset revision is compared only by
callers that pass it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtrbench.infra.errors import MtrbenchError
from mtrbench.results.documents import read_json
from mtrbench.results.result import Result
from mtrbench.results.settings import ResultSettings

OVERWRITE_STRATEGIES = ("always", "only-missing", "never")
DEFAULT_OVERWRITE = "only-missing"


@dataclass(frozen=True)
class Decision:
    evaluate: bool
    reason: str  # "missing", "forced", "finished", "incomplete", "settings differ", "unreadable", "unidentified"


def comparable_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded settings block's identity (:meth:`ResultSettings.identity`)."""
    return ResultSettings.from_json(settings).identity()


def _existing_settings(path: Path) -> tuple[ResultSettings, str | None] | None:
    """The recorded settings and dataset revision; None when the file cannot be read or records no settings.

    Only the settings are needed here, so the result is wrapped without :meth:`Result.load`'s full check."""
    try:
        result = Result(read_json(path), path)
        if not result.has_settings:
            return None
        return result.result_settings, result.dataset_revision
    except (MtrbenchError, KeyError, TypeError, AttributeError):
        return None


def decide(
    path: Path,
    settings: ResultSettings | Mapping[str, Any],
    strategy: str,
    dataset_revision: str | None = None,
    identified: bool = True,
) -> Decision:
    """``settings``: the planned result's (typed, or a recorded block); ``dataset_revision``: compared only when
    given (it is known once the task is loaded). ``identified``: false for a model object without a declared
    revision, whose name alone does not tell it from another object that wrote the file: its finished result is
    never reused (evaluated again under only-missing, refused under never)."""
    if strategy not in OVERWRITE_STRATEGIES:
        raise MtrbenchError(f"--overwrite-strategy must be one of {', '.join(OVERWRITE_STRATEGIES)}, got '{strategy}'")
    if not path.exists():
        return Decision(True, "missing")
    if strategy == "always":
        return Decision(True, "forced")
    if not identified:
        if strategy == "never":
            raise MtrbenchError(
                f"{path}: a result exists and the model object declares no `revision`, so nothing tells it from the "
                f"object that wrote it; overwrite strategy never does not replace it (give the object a revision, "
                f"use only-missing or always, or another output folder)"
            )
        return Decision(True, "unidentified")
    existing = _existing_settings(path)
    if existing is not None and existing[0].rewriter_failures:
        return Decision(True, "incomplete")  # its rewriter failed on some queries: a re-run asks only those
    planned = settings if isinstance(settings, ResultSettings) else ResultSettings.from_json(settings)
    same = (
        existing is not None
        and existing[0].same_result(planned)
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
