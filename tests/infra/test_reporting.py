"""mtrbench.infra.reporting: while the command line's output is attached, log records print as plain lines on the
stream the old print() calls used; outside it the library prints nothing."""

from __future__ import annotations

import logging

from mtrbench.cli import main
from mtrbench.infra.reporting import STDOUT, cli_output, progress_bar, progress_messages

log = logging.getLogger("mtrbench.tests.reporting")


def emit_each_kind() -> None:
    log.info("3 pairs to assess", extra=STDOUT)
    log.warning("warning: 2 files not decodable", extra=STDOUT)
    log.warning("note: a folder holds other settings")
    log.error("an error line")
    log.info("a diagnostic nobody asked for")
    log.debug("a debug detail")


def test_cli_output_prints_plain_lines_on_their_streams(capsys):
    with cli_output():
        emit_each_kind()
    captured = capsys.readouterr()
    assert captured.out == "3 pairs to assess\nwarning: 2 files not decodable\n"
    assert captured.err == "note: a folder holds other settings\nan error line\n"


def test_without_cli_output_nothing_is_printed(capfd):
    emit_each_kind()
    assert capfd.readouterr() == ("", "")


def test_cli_output_restores_the_logger_and_prints_each_line_once(capsys):
    logger = logging.getLogger("mtrbench")
    handlers, level = list(logger.handlers), logger.level
    with cli_output(), cli_output():
        log.warning("warning: once")
    assert capsys.readouterr().err == "warning: once\n"
    assert logger.handlers == handlers and logger.level == level
    assert any(isinstance(h, logging.NullHandler) for h in handlers)


def test_progress_helpers_are_silent_without_show_progress(capfd):
    progress_messages(False)("Encoding corpus")
    assert list(progress_bar(range(3), show_progress=False, desc="items", unit="item")) == [0, 1, 2]
    assert capfd.readouterr() == ("", "")
    progress_messages(True)("Encoding corpus")
    assert capfd.readouterr() == ("", "Encoding corpus\n")


def test_the_command_line_prints_a_library_note_on_stderr(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mtrbench-sample").mkdir()
    assert main(["tasks", "show", "mtrbench-sample"]) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        "note: 'mtrbench-sample' is a registered task; using it, not the folder ./mtrbench-sample "
        "(pass ./mtrbench-sample for the folder)\n"
    )
    assert "name: mtrbench-sample" in captured.out


def test_cli_output_keeps_a_more_verbose_level(capsys):
    logger = logging.getLogger("mtrbench")
    logger.setLevel(logging.DEBUG)
    try:
        with cli_output():
            assert logger.level == logging.DEBUG
            log.debug("a debug detail")
        assert logger.level == logging.DEBUG
    finally:
        logger.setLevel(logging.NOTSET)
    assert capsys.readouterr() == ("", "")  # the handler still prints only what the command line showed before
