"""Numeric flag types: argparse ``type=`` callables that refuse a value off its range while the command line is read,
before any file is opened, model loaded or request sent.

Each raises :class:`argparse.ArgumentTypeError` with a message that starts with "must" (or "is not"); the parser of
``mtrbench.cli.app`` prints it as ``error: --FLAG must ...`` on one line and exits 2. Every numeric flag of every
command uses one of these (tests/cli/test_flag_ranges.py walks the parser and checks it), so a new flag declared
with a bare ``type=int`` or ``type=float`` fails that test until its range is declared here.

Relations between flags (one flag's value bounding another's) are checked by :func:`check_relation` in the
command's handler, still before any heavy work.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

from mtrbench.infra.errors import MtrbenchError, UserInputError


def _number_text(value: float) -> str:
    return f"{value:g}"


@dataclass(frozen=True)
class IntFlag:
    """An integer of at least ``low`` (and at most ``high`` when given); ``message`` replaces the default wording
    ("must be at least LOW") where a command has its own established one."""

    low: int
    high: int | None = None
    message: str | None = None

    @property
    def __name__(self) -> str:  # argparse names the type in its own messages
        return "integer"

    def __call__(self, text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"is not an integer: '{text}'") from None
        if value < self.low or (self.high is not None and value > self.high):
            raise argparse.ArgumentTypeError(f"{self.message or self._range()}, got {value}")
        return value

    def _range(self) -> str:
        if self.high is not None:
            return f"must be between {self.low} and {self.high}"
        return "must be 0 or more" if self.low == 0 else f"must be at least {self.low}"


@dataclass(frozen=True)
class FloatFlag:
    """A finite number in [``low``, ``high``] (an end is open where ``low_open``/``high_open``; None: unbounded)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    message: str | None = None

    @property
    def __name__(self) -> str:
        return "number"

    def __call__(self, text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"is not a number: '{text}'") from None
        if not math.isfinite(value) or not self.contains(value):
            raise argparse.ArgumentTypeError(f"{self.message or self._range()}, got {_number_text(value)}")
        return value

    def contains(self, value: float) -> bool:
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            return False
        return not (self.high is not None and (value > self.high or (self.high_open and value == self.high)))

    def _range(self) -> str:
        if self.low is None and self.high is None:
            return "must be a finite number"
        if self.high is None:
            low = _number_text(self.low or 0.0)
            return f"must be above {low}" if self.low_open else f"must be {low} or more"
        if self.low is None:
            return f"must be below {_number_text(self.high)}"
        left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
        if not self.low_open and not self.high_open:
            return f"must be between {_number_text(self.low)} and {_number_text(self.high)}"
        return f"must be in {left}{_number_text(self.low)}, {_number_text(self.high)}{right}"


@dataclass(frozen=True)
class WeightsFlag:
    """A comma list of finite weights, not all zero; negative ones only where ``allow_negative`` (a method that
    defines them)."""

    allow_negative: bool = False

    @property
    def __name__(self) -> str:
        return "weights"

    def __call__(self, text: str) -> tuple[float, ...]:
        try:
            weights = tuple(float(w) for w in text.split(",") if w.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be numbers separated by commas, got '{text}'") from None
        if not weights:
            raise argparse.ArgumentTypeError(f"must be numbers separated by commas, got '{text}'")
        if not all(math.isfinite(w) for w in weights):
            raise argparse.ArgumentTypeError(f"must be finite numbers, got '{text}'")
        if not self.allow_negative and any(w < 0 for w in weights):
            raise argparse.ArgumentTypeError(f"must be 0 or more, got '{text}'")
        if not any(weights):
            raise argparse.ArgumentTypeError(f"must not all be 0, got '{text}'")
        return weights


@dataclass(frozen=True)
class ListFlag:
    """A comma list of numbers, each in ``item``'s range (a sweep's values); kept as the text given, which the
    command parses into its grid."""

    item: IntFlag | FloatFlag

    @property
    def __name__(self) -> str:
        return "list"

    def __call__(self, text: str) -> str:
        values = [v for v in text.split(",") if v.strip()]
        if not values:
            raise argparse.ArgumentTypeError(f"must be a number or a comma list of numbers, got '{text}'")
        for value in values:
            self.item(value.strip())
        return text


NumberFlag = IntFlag | FloatFlag | WeightsFlag | ListFlag

positive_int = IntFlag(1)  # counts, sizes, cutoffs
non_negative_int = IntFlag(0)  # retries, offsets, a count where 0 means "none"
seed = IntFlag(0, message="must be 0 or more (a seed)")  # numpy's generators refuse negative seeds
share = FloatFlag(0.0, 1.0)  # a share of items, a rate
probability = FloatFlag(0.0, 1.0)
open_share = FloatFlag(0.0, 1.0, low_open=True)  # a threshold where 0 would keep or match everything
positive_float = FloatFlag(0.0, low_open=True)
non_negative_float = FloatFlag(0.0)
finite_float = FloatFlag()
weights = WeightsFlag()
# Flags several commands share, with the wording their refusals had when the handlers checked them.
conversation_limit = IntFlag(1, message="must be a positive number of conversations")
timeout_seconds = FloatFlag(0.0, low_open=True, message="is seconds per request and must be positive")
failure_share = FloatFlag(0.0, 1.0, message="is a share between 0 and 1")
temperature = FloatFlag(0.0, 2.0)
significance = FloatFlag(0.0, 1.0, low_open=True, high_open=True, message="must be between 0 and 1, both excluded")


def chunking_spec(text: str) -> str:
    """``--chunking sentences:SIZE:STRIDE``, checked (size, stride and their relation) and kept as given."""
    from mtrbench.retrieve.chunking import Chunking  # deferred: mtrbench.retrieve loads the model registry

    try:
        Chunking.parse(text)
    except MtrbenchError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def check_relation(holds: bool, message: str) -> None:
    """One ``error:`` line (exit 2) when a relation between flags does not hold; handlers call it before any
    heavy work."""
    if not holds:
        raise UserInputError(message)


def refuse_ignored(given: dict[str, bool], why: str) -> None:
    """Refuse flags that the chosen model or method would ignore: ``given`` maps each such flag to whether it was
    given; ``why`` ends the sentence ("to encoder models; bm25 would ignore {it}": ``{it}`` becomes it or them)."""
    named = [flag for flag, present in given.items() if present]
    if named:
        verb, it = ("applies", "it") if len(named) == 1 else ("apply", "them")
        raise UserInputError(f"{', '.join(named)} {verb} {why.format(it=it)}")


__all__ = [
    "FloatFlag",
    "chunking_spec",
    "conversation_limit",
    "failure_share",
    "significance",
    "temperature",
    "timeout_seconds",
    "IntFlag",
    "ListFlag",
    "NumberFlag",
    "WeightsFlag",
    "check_relation",
    "finite_float",
    "non_negative_float",
    "non_negative_int",
    "open_share",
    "positive_float",
    "positive_int",
    "probability",
    "refuse_ignored",
    "seed",
    "share",
    "weights",
]
