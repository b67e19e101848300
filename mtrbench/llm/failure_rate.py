"""Exit codes that tell the truth: a judge that failed on too many of its items fails the command.

Outputs are still written (what succeeded is kept, a re-run resumes), but the command exits 1 when
any judge failed on more than ``max_rate`` of the items it was given: a table of `-` after eight
connection errors must not look like success to a script or CI.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_FAILURE_RATE = 0.25
EXIT_JUDGE_FAILURES = 1


@dataclass(frozen=True)
class JudgeFailures:
    judge: str
    failed: int
    total: int
    reason: str | None = None  # the most common failure reason, when known

    @property
    def rate(self) -> float:
        return self.failed / self.total if self.total else 0.0


def over_limit(counts: list[JudgeFailures], max_rate: float) -> list[JudgeFailures]:
    return [c for c in counts if c.total and c.rate > max_rate]


def failure_message(c: JudgeFailures, max_rate: float) -> str:
    reason = f"; most common: {c.reason}" if c.reason else ""
    return (f"error: judge '{c.judge}' failed on {c.failed} of {c.total} items ({c.rate:.0%} > --max-failure-rate "
            f"{max_rate:g}{reason}); the log keeps the reasons, a re-run asks only the failed items again")


def most_common(reasons: list[str | None]) -> str | None:
    """The most frequent failure reason and its count, e.g. ``'no rating in the reply' (7)``."""
    from collections import Counter

    counted = Counter(r or "unknown" for r in reasons)
    if not counted:
        return None
    reason, count = counted.most_common(1)[0]
    return f"{reason} ({count})"
