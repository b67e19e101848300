"""audit's --limit is the first N conversations (file order), as everywhere else; --sample N draws a seeded
sample of their queries. Counted through a dry run (nothing is sent)."""

from __future__ import annotations

import re

import pytest

from mtrbench.cli import main
from mtrbench.data import load_task


def requests(capsys, tmp_path, *flags: str) -> int:
    assert (
        main(
            [
                "audit",
                "mtrbench-sample",
                "--llm-model",
                "m",
                "--llm-base-url",
                "http://127.0.0.1:9/v1",
                "--dry-run",
                "--dimensions",
                "quality",
                "--output-dir",
                str(tmp_path / "audit"),
                *flags,
            ]
        )
        == 0
    )
    printed = capsys.readouterr()
    return int(re.search(r"dry run: (\d+) requests", printed.out + printed.err).group(1))


@pytest.fixture(scope="module")
def first_two_conversations() -> list[str]:
    """Queries with gold documents in the sample's first two conversations, in file order (read here)."""
    task = load_task("mtrbench-sample", require_corpus=False)
    conversations = list(dict.fromkeys(q.conversation_id for q in task.queries))[:2]
    return [q.qid for q in task.queries if q.conversation_id in conversations and any(g >= 1 for g in q.qrels.values())]


def test_limit_is_the_first_conversations_and_sample_draws_from_them(capsys, tmp_path, first_two_conversations):
    assert requests(capsys, tmp_path, "--limit", "2") == len(first_two_conversations) == 13
    assert requests(capsys, tmp_path, "--limit", "2", "--sample", "5") == 5


def test_sample_below_one_is_one_error_line(capsys, tmp_path):
    assert main(["audit", "mtrbench-sample", "--llm-model", "m", "--sample", "0", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --sample must be at least 1") and err.count("\n") == 1
