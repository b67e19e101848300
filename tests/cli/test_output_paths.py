"""Output paths of the writers other than eval (generate, synthesize, judge, rag, audit, assess) through the checked
path and write code of mtrbench/infra/atomic.py: a folder given for a file, a file given for (or above) a folder,
an unwritable folder and a full disk are one `error:` line naming the path, exit 2, before any request and with no
partial file; appending to a generations file never proceeds past a line it cannot read."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedChatServer

from mtrbench.cli import main
from mtrbench.generation.store import GenerationStore
from mtrbench.infra import atomic
from mtrbench.infra.atomic import LineAppender
from mtrbench.infra.errors import UserInputError

NOWHERE = "http://127.0.0.1:9/v1"  # nothing listens there: a request would fail, not hang
KEY_ENV = "MTRBENCH_OUTPUT_PATHS_TEST_KEY"


def _one_error_line(argv: list[str], capfd: pytest.CaptureFixture[str]) -> str:
    capfd.readouterr()
    code = main(argv)
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), err
    return err.strip()


def _generate(native_mini: Path, base_url: str) -> list[str]:
    return ["generate", "--task", str(native_mini), "--oracle", "--model", "gen", "--base-url", base_url]


def _cases(tmp: Path, native_mini: Path) -> dict[str, tuple[list[str], str]]:
    folder, blocker = tmp / "a-folder", tmp / "a-file"
    folder.mkdir()
    blocker.write_text("in the way\n")
    judgments = tmp / "judgments.jsonl"
    judgments.write_text("")
    generations = tmp / "generations.jsonl"
    generations.write_text('{"qid": "c1_1", "answer": "212 metres."}\n')
    rag = ["rag", "--model", "bm25", "--task", str(native_mini), "--generator-model", "g"]
    llm = ["--llm-model", "m", "--llm-base-url", NOWHERE]
    return {
        "generate --output FOLDER": (
            [*_generate(native_mini, NOWHERE), "--output", str(folder)],
            rf"cannot write {re.escape(str(folder))}: it is a folder",
        ),
        "generate --output under a file": (
            [*_generate(native_mini, NOWHERE), "--output", str(blocker / "g.jsonl")],
            rf"{re.escape(str(blocker))} is a file, not a folder",
        ),
        "generate --mtrag-out FOLDER": (
            [*_generate(native_mini, NOWHERE), "--mtrag-out", str(folder)],
            rf"cannot write {re.escape(str(folder))}: it is a folder",
        ),
        "synthesize --out FILE": (
            ["synthesize", str(generations), "--out", str(blocker)],
            rf"{re.escape(str(blocker))} is a file, not a folder",
        ),
        "judge run --output FOLDER": (
            ["judge", "run", str(generations), "--task", str(native_mini), "--output", str(folder)],
            rf"cannot write {re.escape(str(folder))}: it is a folder",
        ),
        "judge rad-bench --output FOLDER": (
            ["judge", "rad-bench", "--judgments", str(judgments), "--output", str(folder)],
            rf"cannot write {re.escape(str(folder))}: it is a folder",
        ),
        "rag --output-dir FILE": (
            [*rag, "--generator-base-url", NOWHERE, "--output-dir", str(blocker)],
            rf"{re.escape(str(blocker))} is a file, not a folder",
        ),
        "rag --mtrag-out under a file": (
            [
                *rag,
                "--generator-base-url",
                NOWHERE,
                "--output-dir",
                str(tmp / "o"),
                "--mtrag-out",
                f"{blocker}/p.jsonl",
            ],
            rf"{re.escape(str(blocker))} is a file, not a folder",
        ),
        "audit --output-dir FILE": (
            ["audit", str(native_mini), *llm, "--output-dir", str(blocker)],
            rf"{re.escape(str(blocker))} is a file, not a folder",
        ),
        "assess --output-dir FILE": (
            ["assess", str(native_mini), "--runs", str(generations), *llm, "--output-dir", str(blocker / "x")],
            rf"{re.escape(str(blocker))} is a file, not a folder",
        ),
    }


CASE_NAMES = [
    "generate --output FOLDER",
    "generate --output under a file",
    "generate --mtrag-out FOLDER",
    "synthesize --out FILE",
    "judge run --output FOLDER",
    "judge rad-bench --output FOLDER",
    "rag --output-dir FILE",
    "rag --mtrag-out under a file",
    "audit --output-dir FILE",
    "assess --output-dir FILE",
]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_an_output_path_that_cannot_be_written_is_one_line_before_any_request(
    name, native_mini, tmp_path, capfd, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused")
    argv, expected = _cases(tmp_path, native_mini)[name]
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    line = _one_error_line(argv, capfd)
    assert re.search(expected, line), line
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing created or cut


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_unwritable_folder_is_one_line(native_mini, tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        line = _one_error_line([*_generate(native_mini, NOWHERE), "--output", str(locked / "g.jsonl")], capfd)
    finally:
        locked.chmod(0o700)
    assert line == f"error: cannot write {locked / 'g.jsonl'}: {locked} is not writable"


def _half_then_full(real_write, target: Path):
    """os.write that writes half of what it is given to ``target`` and then finds the disk full."""

    def write(fd: int, data) -> int:
        if os.path.realpath(f"/proc/self/fd/{fd}") != str(target.resolve()):
            return real_write(fd, data)
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    return write


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to tell which file is written")
def test_a_full_disk_leaves_no_part_of_a_line_in_an_appended_file(tmp_path, monkeypatch):
    path = tmp_path / "log.jsonl"
    path.write_text('{"qid": "a"}\n')
    monkeypatch.setattr(atomic.os, "write", _half_then_full(os.write, path))
    with LineAppender(path, fsync=True) as appender:
        with pytest.raises(UserInputError) as refused:
            appender.write('{"qid": "b", "answer": "a long answer that is cut in the middle"}\n')
    assert str(refused.value) == f"cannot write {path}: No space left on device"
    assert path.read_text() == '{"qid": "a"}\n'


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to tell which file is written")
def test_generate_on_a_full_disk_is_one_line_and_keeps_whole_lines(native_mini, tmp_path, capfd, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test")
    output = tmp_path / "g.jsonl"
    monkeypatch.setattr(atomic.os, "write", _half_then_full(os.write, output))
    with ScriptedChatServer(lambda body: Reply("An answer.")) as server:
        argv = [*_generate(native_mini, server.base_url), "--api-key-env", KEY_ENV, "--yes", "--quiet"]
        line = _one_error_line([*argv, "--no-llm-cache", "--output", str(output)], capfd)
    assert line == f"error: cannot write {output}: No space left on device"
    assert not output.exists() or output.read_bytes() == b""  # the first answer found the disk full: no part of it


NOT_UTF8 = b'{"qid": "c1_2", "answer": "caf\xe9"}\n'  # Latin-1 bytes in the answer
NOT_UTF8_BYTE = NOT_UTF8.index(b"\xe9") + 1  # counted from 1


@pytest.mark.parametrize(
    "bad_line, problem",
    [
        (NOT_UTF8, rf":2: not UTF-8 text \(byte {NOT_UTF8_BYTE}:"),
        (b"not json at all\n", r":2: not a JSON record"),
        (b'["c1_2"]\n', r":2: not a generations record"),
    ],
)
def test_generate_refuses_at_once_to_append_past_an_unreadable_line(
    bad_line, problem, native_mini, tmp_path, capfd, monkeypatch
):
    """The regression of issue 32: a non-UTF-8 line was read with replacement characters and 13 answers were
    appended after it (then `judge run` refused the file). Now nothing is asked and the file is left as it was."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    output = tmp_path / "g.jsonl"
    content = b'{"qid": "c1_1", "answer": "212 metres."}\n' + bad_line + b'{"qid": "c1_3", "answer": "Hedda."}\n'
    output.write_bytes(content)
    with ScriptedChatServer(lambda body: Reply("An answer.")) as server:
        argv = [*_generate(native_mini, server.base_url), "--api-key-env", KEY_ENV, "--yes", "--quiet"]
        line = _one_error_line([*argv, "--no-llm-cache", "--output", str(output)], capfd)
        assert server.request_count == 0
    assert re.match(rf"error: {re.escape(str(output))}{problem}", line), line
    assert "nothing is appended" in line and output.read_bytes() == content


def test_a_whole_record_on_a_last_line_without_newline_is_asked_again_not_lost(tmp_path):
    """The torn last line is cut off before appending; a record there, even a complete one, counts as unreadable
    (asked again), never as done (it would be cut off and its turn never asked)."""
    path = tmp_path / "g.jsonl"
    path.write_text('{"qid": "c1_1", "answer": "a"}\n{"qid": "c1_2", "answer": "b"}')
    stored = GenerationStore(path).read({})
    assert sorted(stored.done) == ["c1_1"] and stored.unreadable_lines == 1
    with GenerationStore(path) as store:
        store.append({"qid": "c1_2", "answer": "b again"})
    assert path.read_text() == '{"qid": "c1_1", "answer": "a"}\n{"qid": "c1_2", "answer": "b again"}\n'
