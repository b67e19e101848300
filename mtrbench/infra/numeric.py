"""The one gate every number from outside passes: run and prediction files, per-query files, result and
leaderboard JSON, judge ratings, and what user objects return through the Python API.

A number that is not finite (NaN, inf) or lies off its documented scale is refused with one error naming
where it came from (``file:line``, a JSON path, or the object and query); nothing downstream then has to
guess what a NaN would rank as or average to.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mtrbench.infra.errors import DataError, MtrbenchError

if TYPE_CHECKING:
    import numpy as np
    import torch


@dataclass(frozen=True)
class Scale:
    """A documented range ``[low, high]`` (either end open when None) plus single values also allowed
    (e.g. -1 for an unparsable rating); with no range at all, only those values. ``described`` says it in the
    error message."""

    described: str
    low: float | None = None
    high: float | None = None
    also: tuple[float, ...] = ()

    def holds(self, value: float) -> bool:
        if value in self.also:
            return True
        if self.low is None and self.high is None and self.also:
            return False
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)


# RAD-Bench ratings (docs/judge.md): 1-10, -1 when the judge's rating could not be parsed.
RATING_SCALE = Scale("a rating from 1 to 10, or -1 for an unparsable one", low=1, high=10, also=(-1,))


def _shown(value: object) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def ascii_digits(text: str) -> bool:
    """``text`` is one or more ASCII digits 0-9: what a whole number read from a file or an option is checked with
    before ``int()``. ``str.isdigit()`` also takes "²" (which ``int()`` refuses, a traceback instead of an error line)
    and "١" or "٣" (which ``int()`` reads, silently, as 1 or 3)."""
    return text.isascii() and text.isdigit()


def finite(value: object, where: str, what: str, error: type[MtrbenchError] = DataError) -> float:
    """``value`` as a float: a real number (a bool is not one; a string is parsed as a number) that is
    finite. Otherwise ``error`` with ``where: what VALUE is not ...``."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise error(f"{where}: {what} {_shown(value)} is not a number")
    try:
        number = float(value)
    except ValueError:
        raise error(f"{where}: {what} {_shown(value)} is not a number") from None
    if not math.isfinite(number):
        raise error(f"{where}: {what} {_shown(value)} is not a finite number")
    return number


def whole(value: object, where: str, what: str, error: type[MtrbenchError] = DataError) -> int:
    """:func:`finite` and a whole number (a relevance grade, a count): 2.0 is 2, 2.5 is refused."""
    number = finite(value, where, what, error)
    if not number.is_integer():
        raise error(f"{where}: {what} {_shown(value)} is not a whole number")
    return int(number)


def on_scale(value: object, where: str, what: str, scale: Scale, error: type[MtrbenchError] = DataError) -> float:
    """:func:`finite`, then ``scale``: a value off it is refused naming the scale."""
    number = finite(value, where, what, error)
    if not scale.holds(number):
        raise error(f"{where}: {what} {_shown(value)} is off its scale ({scale.described})")
    return number


def _non_finite_leaves(tree: object, path: str) -> Iterator[tuple[str, float]]:
    if isinstance(tree, float):
        if not math.isfinite(tree):
            yield path, tree
    elif isinstance(tree, dict):
        for key, value in tree.items():
            yield from _non_finite_leaves(value, f"{path}.{key}" if path else str(key))
    elif isinstance(tree, (list, tuple)):
        for index, value in enumerate(tree):
            yield from _non_finite_leaves(value, f"{path}[{index}]")


def finite_tree(tree: object, where: str, error: type[MtrbenchError] = DataError) -> None:
    """Refuse a parsed JSON document (or record) holding NaN or an infinity anywhere, naming its JSON path
    (Python's json reads the non-standard ``NaN`` and ``Infinity`` literals without a word)."""
    for path, value in _non_finite_leaves(tree, ""):
        raise error(f"{where}: {path or 'the value'} is {value}, not a finite number")


def finite_matrix(matrix: np.ndarray | torch.Tensor, refusal: str, error: type[MtrbenchError] = DataError) -> None:
    """Raise ``error(refusal)`` when a matrix (embeddings, per-query scores) holds NaN or an infinity."""
    import numpy  # deferred: numpy only for a matrix; the file readers of this module need none

    if isinstance(matrix, numpy.ndarray):
        finite_everywhere = bool(numpy.isfinite(matrix).all())
    else:  # a torch tensor (torch is loaded wherever one exists)
        finite_everywhere = bool(matrix.isfinite().all())
    if not finite_everywhere:
        raise error(refusal)


def json_text(
    document: object,
    *,
    path: str | Path,
    indent: int | None = None,
    ensure_ascii: bool = True,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
    default: Callable[[object], object] | None = None,
) -> str:
    """``json.dumps(document, ...)`` for an output file, with the same formatting arguments, that refuses NaN and
    infinities (which Python's json would write as the non-standard ``NaN``/``Infinity``): a :class:`DataError`
    naming ``path`` (the output file, or ``file:line``) and the JSON path of the first non-finite value."""
    try:
        return json.dumps(
            document,
            allow_nan=False,
            indent=indent,
            ensure_ascii=ensure_ascii,
            sort_keys=sort_keys,
            separators=separators,
            default=default,
        )
    except ValueError:
        for json_path, value in _non_finite_leaves(document, ""):
            raise DataError(
                f"{path}: not written: {json_path or 'the value'} is {value}, not a finite number"
            ) from None
        raise  # not a non-finite number (e.g. a circular reference): a bug, not bad data


def json_lines(records: Iterable[object], *, path: str | Path, ensure_ascii: bool = True) -> str:
    """One :func:`json_text` line per record (JSONL), each ending in a newline; a refusal names ``path:LINE``."""
    return "".join(
        json_text(record, path=f"{path}:{number}", ensure_ascii=ensure_ascii) + "\n"
        for number, record in enumerate(records, 1)
    )
