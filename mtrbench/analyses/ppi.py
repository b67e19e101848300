"""Prediction-powered inference (PPI) for a mean (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, Science 2023),
as ARES (stanford-futuredata/ARES) applies it to LLM judges: an LLM labels every item, humans label a small subset,
and the humans' disagreement with the LLM on that subset corrects the LLM's mean.

With ``f`` the LLM's values on all ``N`` items and ``(f_i, y_i)`` the LLM's and the humans' values on the ``n``
labelled items:

    theta_PP = mean(f over all N) - mean(f_i - y_i over the n labelled)
    interval = theta_PP +- z_{1 - alpha/2} * sqrt(var(f) / N + var(f_i - y_i) / n)

with sample variances (``n - 1`` in the denominator; ARES's NumPy ``std`` divides by ``n``, a factor
``sqrt(n / (n - 1))`` on each term). The classical interval uses the human labels alone:
``mean(y) +- z * sqrt(var(y) / n)``.

The first term averages the LLM over *all* items, the labelled ones included, as ARES does (its unlabelled set is
the whole evaluation set), so the LLM-only mean and the PPI mean describe the same items. The paper's analysis
takes the two sets independent; with the labelled items inside the first mean the two terms share ``n`` of the
``N`` items, and the variance above leaves out their covariance ``-2 cov(f, f - y) / N``. For a judge whose errors
grow with its value (the usual case, cov > 0) the interval is then slightly wide (conservative): in a simulation
(1,000 draws per seed, nominal 95%) it covered 94.7-96.9% over four seeds with 10% of the items labelled, and
94.8-95.9% over six seeds with 5% labelled. The effect vanishes as ``n / N`` shrinks. Assumptions: the labelled subset is a uniform random sample of the items, labels are on one
numeric scale, and ``n`` is large enough for the normal approximation.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np

from mtrbench.formats.lines import read_lines
from mtrbench.infra.errors import DataError, UserInputError


@dataclass(frozen=True)
class PPIEstimate:
    """A mean estimated three ways: the LLM alone, PPI, and the humans alone (classical)."""

    llm_mean: float  # mean of the LLM's values over all items
    ppi_mean: float
    ppi_low: float
    ppi_high: float
    human_mean: float  # mean of the human labels (the labelled subset only)
    human_low: float  # the classical interval from the human labels alone
    human_high: float
    rectifier: float  # mean of (LLM - human) over the labelled subset: what PPI subtracts
    items: int  # N: items the LLM labelled
    labelled: int  # n: of those, items with a human label
    alpha: float  # the intervals cover with probability 1 - alpha

    @property
    def confidence(self) -> float:
        return 1.0 - self.alpha

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


@dataclass(frozen=True)
class PPIBounds:
    """Vectorised PPI along the last axis (one row per draw): point estimates and interval ends as arrays."""

    ppi_mean: np.ndarray
    low: np.ndarray
    high: np.ndarray


def _z(alpha: float) -> float:
    if not 0.0 < alpha < 1.0:
        raise UserInputError(f"alpha must be between 0 and 1, got {alpha}")
    return NormalDist().inv_cdf(1.0 - alpha / 2.0)


def ppi_bounds(llm_all: np.ndarray, llm_labelled: np.ndarray, human: np.ndarray, alpha: float = 0.05) -> PPIBounds:
    """PPI over the last axis of each array (``llm_all``: ``(..., N)``; the labelled pair: ``(..., n)``), so that
    many simulated draws are computed at once. Needs ``n >= 2`` and ``N >= 2`` for the sample variances."""
    f_all = np.asarray(llm_all, dtype=float)
    residual = np.asarray(llm_labelled, dtype=float) - np.asarray(human, dtype=float)
    n, big_n = residual.shape[-1], f_all.shape[-1]
    if n < 2 or big_n < 2:
        raise DataError(f"PPI needs at least two labelled items and two items in all, got {n} and {big_n}")
    estimate = f_all.mean(axis=-1) - residual.mean(axis=-1)
    half = _z(alpha) * np.sqrt(f_all.var(axis=-1, ddof=1) / big_n + residual.var(axis=-1, ddof=1) / n)
    return PPIBounds(estimate, estimate - half, estimate + half)


def ppi_mean(llm: Mapping[str, float], human: Mapping[str, float], alpha: float = 0.05) -> PPIEstimate:
    """The PPI estimate of the mean over the items of ``llm`` (item id -> the LLM's value), corrected by ``human``
    (item id -> the human label, on the same scale) on the items both have. A human-labelled id the LLM did not
    label is an error; items the LLM labelled and humans did not only enter the LLM's mean."""
    unknown = [key for key in human if key not in llm]
    if unknown:
        raise DataError(f"{len(unknown)} human-labelled item(s) the LLM did not label, e.g. '{unknown[0]}'")
    ids = list(human)
    f_all = np.array([llm[key] for key in llm], dtype=float)
    f_lab = np.array([llm[key] for key in ids], dtype=float)
    y = np.array([human[key] for key in ids], dtype=float)
    if not (np.all(np.isfinite(f_all)) and np.all(np.isfinite(y))):
        raise DataError("PPI needs finite values")
    bounds = ppi_bounds(f_all, f_lab, y, alpha)
    human_half = _z(alpha) * math.sqrt(float(y.var(ddof=1)) / len(y))
    return PPIEstimate(
        llm_mean=float(f_all.mean()),
        ppi_mean=float(bounds.ppi_mean),
        ppi_low=float(bounds.low),
        ppi_high=float(bounds.high),
        human_mean=float(y.mean()),
        human_low=float(y.mean() - human_half),
        human_high=float(y.mean() + human_half),
        rectifier=float((f_lab - y).mean()),
        items=len(f_all),
        labelled=len(y),
        alpha=alpha,
    )


# -- human labels files ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelScale:
    """The labels a measure takes, as written in a human-labels file, and the number each one counts as."""

    name: str  # named in error messages: "grade 0-3", "verdict", ...
    values: Mapping[str, float]  # label text (lower case) -> value

    @classmethod
    def integers(cls, low: int, high: int, name: str | None = None) -> LabelScale:
        return cls(name or f"{low}-{high}", {str(v): float(v) for v in range(low, high + 1)})

    @classmethod
    def binary(cls, name: str = "yes/no") -> LabelScale:
        words = {"1": 1.0, "0": 0.0, "true": 1.0, "false": 0.0, "yes": 1.0, "no": 0.0}
        return cls(name, {**words, "correct": 1.0, "incorrect": 0.0, "relevant": 1.0, "not relevant": 0.0})

    def value_of(self, raw: object) -> float | None:
        """The value of a label as read from a file (text, a JSON number or boolean); None when off the scale."""
        if isinstance(raw, bool):
            text = "true" if raw else "false"
        elif isinstance(raw, float) and raw.is_integer():
            text = str(int(raw))
        elif isinstance(raw, (int, float, str)):
            text = str(raw).strip().lower()
        else:
            return None
        return self.values.get(text)

    def shown(self) -> str:
        labels = list(self.values)
        return ", ".join(labels[:8]) + (", ..." if len(labels) > 8 else "")


def read_human_labels(
    path: str | Path, scale: LabelScale, known_ids: Collection[str] | None = None
) -> dict[str, float]:
    """Human labels, item id -> value on ``scale``. One label a line, either JSON Lines ``{"id": ..., "label": ...}``
    or two tab-separated columns ``id<TAB>label`` (an optional first line ``id<TAB>label`` is a header); blank lines
    and lines starting with ``#`` are skipped. An id not in ``known_ids``, an id given twice, or a label off the
    scale is one error naming the file and line."""
    labels: dict[str, float] = {}
    for index, line in enumerate(read_lines(path, "human labels")):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        where = f"{path}:{index + 1}"
        if not labels and text.lower().split("\t") == ["id", "label"]:
            continue
        item, raw = _id_and_label(text, where)
        if known_ids is not None and item not in known_ids:
            raise DataError(f"{where}: id '{item}' is not an item of what is judged")
        if item in labels:
            raise DataError(f"{where}: id '{item}' is labelled twice")
        value = scale.value_of(raw)
        if value is None:
            raise DataError(f"{where} ({item}): label '{raw}' is not on the {scale.name} scale ({scale.shown()})")
        labels[item] = value
    if not labels:
        raise DataError(f"human labels file {path} holds no label")
    return labels


def _id_and_label(text: str, where: str) -> tuple[str, object]:
    if text.startswith("{"):
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(f"{where}: not a JSON object ({exc.msg})") from None
        if not isinstance(record, dict) or "id" not in record or "label" not in record:
            raise DataError(f'{where}: a JSON line needs "id" and "label"')
        item = record["id"]
        if not isinstance(item, (str, int)) or isinstance(item, bool) or not str(item).strip():
            raise DataError(f'{where}: "id" must be a non-empty string or integer')
        return str(item).strip(), record["label"]
    fields = text.split("\t")
    if len(fields) != 2 or not fields[0].strip():
        raise DataError(f'{where}: a line needs \'id<TAB>label\' or a JSON object {{"id": ..., "label": ...}}')
    return fields[0].strip(), fields[1].strip()
