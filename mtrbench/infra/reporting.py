"""How library code reports: ``logging`` for messages, one progress facility for bars and status lines.

Library modules never print. They log through ``log = logging.getLogger(__name__)`` (every logger under the
``mtrbench`` logger, which carries a ``NullHandler``: an API user sees nothing unless they configure logging),
and they show progress only when asked (``show_progress``) through :func:`progress_bar` and
:func:`progress_messages`, which write to stderr as tqdm does.

A message is logged as the complete line the command line shows (``"note: ..."``, ``"warning: ..."``). The
command line attaches :func:`cli_output` once; it prints each record's message as it is:

- records logged with ``extra=STDOUT`` on stdout (what a command reports: counts, cost estimates, prompts);
- other records at WARNING or above on stderr (notes and warnings);
- other records below WARNING not at all (diagnostics; configure logging to see them).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TypeVar

from tqdm.auto import tqdm

PACKAGE_LOGGER = "mtrbench"  # its NullHandler is added in mtrbench/__init__.py, on import of the package
STDOUT_ATTRIBUTE = "mtrbench_stdout"
STDOUT: Mapping[str, object] = {STDOUT_ATTRIBUTE: True}  # ``log.info(message, extra=STDOUT)``: a command's output

T = TypeVar("T")


class PlainHandler(logging.Handler):
    """The command line's handler: a record's message alone, on stdout (``extra=STDOUT``) or stderr (WARNING
    and above). The stream is looked up when the record is written, so a replaced ``sys.stdout`` (a test's
    capture, a redirect) receives it."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, STDOUT_ATTRIBUTE, False):
            stream = sys.stdout
        elif record.levelno >= logging.WARNING:
            stream = sys.stderr
        else:
            return
        try:
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:  # logging's contract: a failed write is reported by handleError, never raised
            self.handleError(record)


@contextmanager
def cli_output() -> Iterator[PlainHandler]:
    """While it is open, mtrbench's log records print as the command line shows them (see the module text);
    on exit the ``mtrbench`` logger is as it was, so a process that also uses the API stays silent. Opened
    again inside itself (a command run from a command) it adds nothing: every line is printed once."""
    logger = logging.getLogger(PACKAGE_LOGGER)
    attached = next((h for h in logger.handlers if isinstance(h, PlainHandler)), None)
    if attached is not None:
        yield attached
        return
    handler = PlainHandler()
    level = logger.level
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:  # a more verbose level set by the user (or a test) stays
        logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


REPORT_LOGGER = f"{PACKAGE_LOGGER}.report"


def report(text: str) -> None:
    """Text for the person running a command (a dry run's prompts, a cost table): a command's output, so the
    command line shows it on stdout (one or more lines, as given)."""
    logging.getLogger(REPORT_LOGGER).info(text, extra=STDOUT)


def show_reports() -> None:
    """Show :func:`report` text on stdout from now on, without the command line's handler (tests that call the
    library directly and read its stdout); idempotent."""
    logger = logging.getLogger(REPORT_LOGGER)
    if not any(isinstance(handler, PlainHandler) for handler in logger.handlers):
        logger.addHandler(PlainHandler())
    logger.setLevel(logging.INFO)
    logger.propagate = False


def progress_bar(
    iterable: Iterable[T] | None = None,
    *,
    show_progress: bool,
    desc: str,
    unit: str,
    total: int | None = None,
    leave: bool = True,
    **options: object,
) -> tqdm:
    """A tqdm bar on stderr, drawn only with ``show_progress``; ``options`` are tqdm's (``mininterval``,
    ``initial``, ``dynamic_ncols``...)."""
    return tqdm(iterable, total=total, desc=desc, unit=unit, leave=leave, disable=not show_progress, **options)


def progress_messages(show_progress: bool) -> Callable[[str], None]:
    """Status lines (``"Encoding corpus"``) on stderr with ``show_progress``, else a function that drops them."""
    if not show_progress:
        return _drop
    return _to_stderr


def _to_stderr(message: str) -> None:
    sys.stderr.write(message + "\n")


def _drop(message: str) -> None:
    return None


__all__ = [
    "PACKAGE_LOGGER",
    "STDOUT",
    "PlainHandler",
    "cli_output",
    "progress_bar",
    "progress_messages",
    "report",
    "show_reports",
]
