"""Exit codes that tell the truth: an LLM stage that failed on too many of its items fails the command.

Every LLM-using command (judge run, judge rad-bench, generate, rag, synthesize, audit, assess, eval's
rewriter) counts, per judge or stage, how many of its items failed (HTTP error, timeout, unusable reply)
and compares that share with ``--max-failure-rate`` through :func:`failure_line` / :func:`raise_if_over`.
Outputs are still written (what succeeded is kept, a re-run resumes), but past the limit the command exits 1
(``TooManyFailures``) with one line naming failed/total and the most common reason: a table of `-` after
eight connection errors must not look like success to a script or CI.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mtrbench.infra.errors import TooManyFailures, UserInputError

DEFAULT_MAX_FAILURE_RATE = 0.25
EXIT_JUDGE_FAILURES = TooManyFailures.exit_code


@dataclass(frozen=True)
class JudgeFailures:
    """Failed/total items of one judge or stage (``judge``: its name, e.g. 'gpt4o' or 'generation')."""

    judge: str
    failed: int
    total: int
    reason: str | None = None  # the most common failure reason with its count, when known
    kind: str = "judge"  # what failed, for the message: judge, stage, rewriter, agents
    unit: str = "items"  # what was counted: items, turns, requests, conversations

    @property
    def rate(self) -> float:
        return self.failed / self.total if self.total else 0.0


def check_share(max_rate: float) -> float:
    """``max_rate`` itself, or a UserInputError when it is not a share in [0, 1] (checked before any work)."""
    if not 0 <= max_rate <= 1:
        raise UserInputError(f"--max-failure-rate is a share between 0 and 1, got {max_rate:g}")
    return max_rate


def over_limit(counts: Iterable[JudgeFailures], max_rate: float) -> list[JudgeFailures]:
    return [c for c in counts if c.total and c.rate > max_rate]


def describe(c: JudgeFailures, max_rate: float) -> str:
    """One line without the ``error:`` prefix: who failed, failed/total, the share and the most common reason."""
    reason = f"; most common: {c.reason}" if c.reason else ""
    return (
        f"{c.kind} '{c.judge}' failed on {c.failed} of {c.total} {c.unit} ({c.rate:.0%} > --max-failure-rate "
        f"{max_rate:g}{reason})"
    )


def failure_message(c: JudgeFailures, max_rate: float) -> str:
    return f"error: {describe(c, max_rate)}; the log keeps the reasons, a re-run asks only the failed items again"


def failure_line(counts: Iterable[JudgeFailures], max_rate: float) -> str | None:
    """The one message for every count over the limit (joined by '; '), or None when all are within it."""
    bad = over_limit(counts, check_share(max_rate))
    return "; ".join(describe(c, max_rate) for c in bad) if bad else None


def raise_if_over(
    counts: Iterable[JudgeFailures], max_rate: float, then: str = "", finished: list[object] | None = None
) -> None:
    """Raise ``TooManyFailures`` (exit 1, one ``error:`` line) when a count is over ``max_rate``; ``then`` is
    appended to say what was kept and how to resume."""
    line = failure_line(counts, max_rate)
    if line:
        raise TooManyFailures(line + (f"; {then}" if then else ""), finished)


def most_common(reasons: Iterable[str | None] | Mapping[str, int]) -> str | None:
    """The most frequent failure reason and its count, e.g. ``'no rating in the reply' (7)``, from a list of
    reasons (one per failure) or a mapping reason -> count."""
    counted = Counter(reasons) if isinstance(reasons, Mapping) else Counter(r or "unknown" for r in reasons)
    counted = +counted  # zero counts are no reason
    if not counted:
        return None
    reason, count = counted.most_common(1)[0]
    return f"{reason} ({count})"
