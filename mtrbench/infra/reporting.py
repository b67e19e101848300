"""Text meant for the person running a command (a dry run's prompts, a cost estimate), from library code.

Library code never prints: it hands such text to the ``mtrbench.report`` logger (:func:`report`). The command line
calls :func:`show_reports` once, which shows that logger's messages on stdout as plain lines, exactly as they were
printed before; an API caller sees them only when it configures logging itself (or calls ``show_reports``).
"""

from __future__ import annotations

import logging
import sys

REPORT_LOGGER = "mtrbench.report"
_report = logging.getLogger(REPORT_LOGGER)


def report(text: str) -> None:
    """Hand ``text`` (one or more lines) to the person running the command."""
    _report.info(text)


class PlainStdout(logging.Handler):
    """Each message as it is, on whatever ``sys.stdout`` is when it is emitted (tests replace it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stdout.write(record.getMessage() + "\n")
            sys.stdout.flush()
        except Exception:  # logging's contract: a failing handler reports, never raises
            self.handleError(record)


def show_reports() -> None:
    """Show reports on stdout from now on (idempotent); they no longer reach the root logger's handlers."""
    if not any(isinstance(handler, PlainStdout) for handler in _report.handlers):
        _report.addHandler(PlainStdout())
    _report.setLevel(logging.INFO)
    _report.propagate = False
