"""`qrels agree`: PPI's mean grade is corrected by the human (second file's) grades, and the ranking agreement of a
binary measure uses --threshold as trec_eval's relevance level. Expected values by hand and from pytrec_eval."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
import pytrec_eval

from mtrbench.analyses.qrels_agreement import AgreeOptions, agree
from mtrbench.cli import main

LLM = {"q1": {"d1": 3, "d2": 2, "d3": 0, "d4": 1}, "q2": {"d1": 0, "d2": 1, "d3": 2, "d4": 3}}
HUMAN = {"q1": {"d1": 2, "d3": 1}, "q2": {"d2": 0, "d4": 3}}  # four of the LLM's eight pairs
# each system's ranking of the four documents of both queries
RUNS = {
    "low": {"q1": ["d4", "d3", "d2", "d1"], "q2": ["d2", "d1", "d3", "d4"]},  # grade-1 documents first
    "high": {"q1": ["d1", "d2", "d4", "d3"], "q2": ["d4", "d3", "d2", "d1"]},
    "mixed": {"q1": ["d1", "d4", "d3", "d2"], "q2": ["d2", "d4", "d1", "d3"]},
}


def _write_qrels(path: Path, qrels: dict[str, dict[str, int]]) -> str:
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    return str(path)


def _write_run(path: Path, name: str, ranking: dict[str, list[str]]) -> str:
    path.write_text(
        "".join(f"{q} Q0 {d} {r} {10 - r} {name}\n" for q, docs in ranking.items() for r, d in enumerate(docs, 1))
    )
    return str(path)


def test_ppi_mean_grade_is_corrected_by_the_human_grades(tmp_path):
    result = agree(
        AgreeOptions(
            _write_qrels(tmp_path / "llm.qrels", LLM),
            _write_qrels(tmp_path / "human.qrels", HUMAN),
            threshold=2,
            second_is_human=True,
        )
    )
    grade = result.ppi["mean grade"]
    # by hand: the LLM's mean over its 8 pairs is 12/8; on the 4 shared pairs LLM - human = 1, -1, 1, 0
    assert grade.llm_mean == pytest.approx(1.5)
    assert grade.rectifier == pytest.approx(0.25)
    assert grade.ppi_mean == pytest.approx(1.25)
    assert grade.human_mean == pytest.approx(6 / 4)
    # var(LLM grades, ddof 1) = 10/7 over N = 8; var(residuals, ddof 1) = 2.75/3 over n = 4
    half = NormalDist().inv_cdf(0.975) * np.sqrt(10 / 7 / 8 + 2.75 / 3 / 4)
    assert (grade.ppi_low, grade.ppi_high) == (pytest.approx(1.25 - half), pytest.approx(1.25 + half))
    # relevant share (grade >= 2): LLM 4/8; LLM - human on the shared pairs = 0, 0, 0, 0
    share = result.ppi["relevant share"]
    assert (share.llm_mean, share.rectifier, share.ppi_mean) == (0.5, 0.0, 0.5)


def _precision_at_2(qrels: dict[str, dict[str, int]], level: int) -> dict[str, float]:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"P_2"}, relevance_level=level)
    means = {}
    for name, ranking in RUNS.items():
        run = {q: {d: float(10 - r) for r, d in enumerate(docs, 1)} for q, docs in ranking.items()}
        means[name] = float(np.mean([v["P_2"] for v in evaluator.evaluate(run).values()]))
    return means


@pytest.mark.parametrize("threshold", [2, 3])
def test_ranking_of_a_binary_measure_uses_the_threshold(tmp_path, threshold):
    runs = tuple(_write_run(tmp_path / f"{name}.trec", name, ranking) for name, ranking in RUNS.items())
    result = agree(
        AgreeOptions(
            _write_qrels(tmp_path / "llm.qrels", LLM),
            _write_qrels(tmp_path / "human.qrels", HUMAN),
            threshold=threshold,
            runs=runs,
            measure="P@2",
        )
    )
    ranking = result.ranking
    assert ranking is not None
    first = dict(zip(ranking.systems, ranking.means_first))
    second = dict(zip(ranking.systems, ranking.means_second))
    assert first == pytest.approx(_precision_at_2(LLM, threshold))
    assert second == pytest.approx(_precision_at_2(HUMAN, threshold))
    # the fixture's point: at trec_eval's default level 1 the LLM's precisions differ
    assert _precision_at_2(LLM, 1) != pytest.approx(_precision_at_2(LLM, threshold))


def test_cli_ranking_uses_the_threshold_when_no_relevance_level_is_given(tmp_path, capsys):
    runs = [_write_run(tmp_path / f"{name}.trec", name, ranking) for name, ranking in RUNS.items()]
    out = tmp_path / "agree.json"
    argv = ["qrels", "agree", _write_qrels(tmp_path / "llm.qrels", LLM), _write_qrels(tmp_path / "human.qrels", HUMAN)]
    assert main([*argv, "--threshold", "3", "--runs", *runs, "--measure", "P@2", "--output", str(out)]) == 0
    capsys.readouterr()
    ranking = json.loads(out.read_text())["ranking"]
    assert dict(zip(ranking["systems"], ranking["means_first"])) == pytest.approx(_precision_at_2(LLM, 3))
