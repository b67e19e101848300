"""The algorithmic metrics' log: a killed run computes again only the tasks the log lacks, and a task whose
inputs changed is computed again. A counting stand-in scorer records which pairs BERTScore was asked for."""

from __future__ import annotations

from pathlib import Path

from mtrbench.formats.mtrag_eval import read_tasks
from mtrbench.judge.mtrag.algorithmic import ALGORITHMIC_METRICS
from mtrbench.judge.mtrag.bertscore import BertScoreOptions, BertScorer
from mtrbench.judge.mtrag.resume import LOG_NAME, algorithmic_with_log

PREDICTIONS = Path(__file__).resolve().parents[1] / "data" / "mtrag_eval" / "responses-4.jsonl"


class CountingScorer(BertScorer):
    def __init__(self) -> None:
        super().__init__(BertScoreOptions(model="stand-in"))
        self.candidates: list[str] = []

    def precision_recall(self, candidates, references):
        self.candidates += candidates
        return [(len(c) / 1000, len(r) / 1000) for c, r in zip(candidates, references)]


def test_a_cut_log_recomputes_only_the_missing_tasks(tmp_path):
    tasks = read_tasks(PREDICTIONS)
    settings = {"model": "stand-in"}
    first = CountingScorer()
    full = algorithmic_with_log(tasks, ALGORITHMIC_METRICS, first, settings, tmp_path)
    pairs_per_task = [len(t.targets) + len(t.contexts) for t in tasks]
    assert len(first.candidates) == sum(pairs_per_task)
    log = (tmp_path / LOG_NAME).read_text().splitlines()
    assert len(log) == len(tasks)
    (tmp_path / LOG_NAME).write_text("\n".join(log[:2]) + "\n" + log[2][:30])  # killed while writing task 3
    again = CountingScorer()
    assert algorithmic_with_log(tasks, ALGORITHMIC_METRICS, again, settings, tmp_path) == full
    assert len(again.candidates) == sum(pairs_per_task[2:])
    untouched = CountingScorer()
    assert algorithmic_with_log(tasks, ALGORITHMIC_METRICS, untouched, settings, tmp_path) == full
    assert untouched.candidates == []
    other_model = CountingScorer()
    algorithmic_with_log(tasks, ALGORITHMIC_METRICS, other_model, {"model": "other"}, tmp_path)
    assert len(other_model.candidates) == sum(pairs_per_task)  # other settings: nothing reused
