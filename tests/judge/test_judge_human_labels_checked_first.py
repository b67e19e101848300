"""`judge run --human-labels`: a label naming no judged item (or too few labels) is refused before the first judge
request, by the domain function the command calls (``judge_generations`` with ``JudgeOptions.human_labels``), not
after every reply has been paid for. Against a scripted judge on 127.0.0.1 that counts the requests."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedChatServer

from mtrbench.data import load_task
from mtrbench.formats.generations import read_generations
from mtrbench.infra.errors import DataError
from mtrbench.judge.api import JudgeOptions, judge_generations
from mtrbench.llm.config import JudgeConfig

GENERATIONS = Path(__file__).resolve().parents[1] / "data" / "generations-sample.jsonl"  # 4 turns, generator "scripted"
KEY_ENV = "MTRBENCH_H2_JUDGE_KEY"


def judged(tmp_path: Path, labels: str) -> tuple[int, str | None]:
    """judge_generations with --human-labels ``labels``: (requests the judge received, the error raised if any)."""
    human = tmp_path / "human.tsv"
    human.write_text(labels)
    options = JudgeOptions(mode="rating", output_dir=tmp_path / "out", yes=True, show_progress=False)
    options.human_labels = str(human)
    with ScriptedChatServer(lambda body: Reply("Rating: [[5]]")) as server:
        judge = JudgeConfig("j", "judge-m", base_url=server.base_url, api_key_env=KEY_ENV, max_retries=0)
        try:
            judge_generations(read_generations(GENERATIONS), load_task("mtrbench-sample"), judge, options)
        except DataError as exc:
            return server.request_count, str(exc)
        return server.request_count, None


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ("geo-01_1\t7\nnot-a-turn\t5\n", r"human\.tsv:2: id 'not-a-turn' is not an item of what is judged$"),
        ("geo-01_1\t7\nscripted|geo-01_1\t5\n", r"human\.tsv: a turn is labelled twice \(once by its key, once by"),
        ("scripted|geo-01_2\t7\n", r"human\.tsv: PPI needs at least two labelled items, the file labels 1$"),
    ],
)
def test_bad_label_ids_are_refused_before_any_request(tmp_path, monkeypatch, labels, message):
    monkeypatch.setenv(KEY_ENV, "sk-test")
    asked, error = judged(tmp_path, labels)
    assert error is not None and re.search(message, error), error
    assert asked == 0 and not (tmp_path / "out").exists()  # refused before the judge or its folder was touched


def test_good_label_ids_let_every_turn_be_judged(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test")
    assert judged(tmp_path, "geo-01_1\t7\nscripted|geo-01_2\t5\n") == (4, None)
