"""Prediction-powered inference: the formula by hand on a small example, nominal coverage in a seeded simulation,
and the human-labels reader's errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mtrbench.analyses.ppi import LabelScale, ppi_bounds, ppi_mean, read_human_labels
from mtrbench.infra.errors import DataError, UserInputError

Z95 = 1.959963984540054


def test_ppi_equals_the_formula_by_hand():
    llm = {"a": 1.0, "b": 0.0, "c": 1.0, "d": 1.0, "e": 0.0, "f": 1.0}
    human = {"a": 1.0, "b": 1.0, "c": 0.0}
    estimate = ppi_mean(llm, human)
    # by hand: LLM mean over all six = 4/6; residuals f - y on a, b, c = 0, -1, 1 (mean 0, sample variance 1)
    llm_mean = 4 / 6
    var_f = sum((v - llm_mean) ** 2 for v in llm.values()) / 5  # = (4 * (1/3)^2 + 2 * (2/3)^2) / 5 = 4/15
    assert var_f == pytest.approx(4 / 15)
    half = Z95 * math.sqrt(var_f / 6 + 1.0 / 3)
    assert estimate.llm_mean == pytest.approx(llm_mean)
    assert estimate.rectifier == pytest.approx(0.0)
    assert estimate.ppi_mean == pytest.approx(llm_mean - 0.0)
    assert (estimate.ppi_low, estimate.ppi_high) == pytest.approx((llm_mean - half, llm_mean + half))
    # classical: human mean 2/3, sample variance of (1, 1, 0) = 1/3
    human_half = Z95 * math.sqrt((1 / 3) / 3)
    assert estimate.human_mean == pytest.approx(2 / 3)
    assert (estimate.human_low, estimate.human_high) == pytest.approx((2 / 3 - human_half, 2 / 3 + human_half))
    assert (estimate.items, estimate.labelled, estimate.alpha) == (6, 3, 0.05)


def test_ppi_corrects_a_biased_judge():
    llm = {str(i): float(v) for i, v in enumerate([3, 2, 3, 3, 1, 2, 3, 2])}
    human = {"0": 2.0, "1": 1.0, "2": 3.0, "3": 2.0}  # the LLM is 0.75 too generous on these
    estimate = ppi_mean(llm, human, alpha=0.1)
    assert estimate.rectifier == pytest.approx(0.75)
    assert estimate.ppi_mean == pytest.approx(19 / 8 - 0.75)
    residuals = np.array([1.0, 1.0, 0.0, 1.0])
    half = 1.6448536269514722 * math.sqrt(np.var(list(llm.values()), ddof=1) / 8 + residuals.var(ddof=1) / 4)
    assert estimate.ppi_high - estimate.ppi_mean == pytest.approx(half)
    assert estimate.confidence == pytest.approx(0.9)


def test_ppi_interval_covers_the_true_mean_at_the_nominal_rate():
    rng = np.random.default_rng(20231)
    draws, items, labelled = 1000, 2000, 100  # 5% labelled, the regime PPI is for
    truth = 0.3  # humans say relevant with probability 0.3
    human = (rng.random((draws, items)) < truth).astype(float)
    # a noisy, biased judge: flips 15% of the labels and calls 10% of the rest relevant on top
    flips = rng.random((draws, items)) < 0.15
    llm = np.where(flips, 1.0 - human, human)
    llm = np.maximum(llm, (rng.random((draws, items)) < 0.10).astype(float))
    chosen = np.argsort(rng.random((draws, items)), axis=1)[:, :labelled]  # a uniform subset per draw
    bounds = ppi_bounds(llm, np.take_along_axis(llm, chosen, 1), np.take_along_axis(human, chosen, 1))
    coverage = float(np.mean((bounds.low <= truth) & (truth <= bounds.high)))
    assert 0.93 <= coverage <= 0.97
    assert abs(float(llm.mean()) - truth) > 0.05  # the LLM alone is off: the correction matters


def test_ppi_errors():
    with pytest.raises(DataError, match="did not label, e.g. 'z'"):
        ppi_mean({"a": 1.0, "b": 0.0}, {"a": 1.0, "z": 0.0})
    with pytest.raises(DataError, match="at least two labelled"):
        ppi_mean({"a": 1.0, "b": 0.0}, {"a": 1.0})
    with pytest.raises(UserInputError, match="alpha"):
        ppi_mean({"a": 1.0, "b": 0.0}, {"a": 1.0, "b": 1.0}, alpha=1.5)


def test_read_human_labels_jsonl_and_tsv(tmp_path):
    jsonl = tmp_path / "h.jsonl"
    jsonl.write_text(
        "\n".join(
            json.dumps(r) for r in [{"id": "t1", "label": 3}, {"id": "t2", "label": "0"}, {"id": 7, "label": 2.0}]
        )
        + "\n\n"
    )
    assert read_human_labels(jsonl, LabelScale.integers(0, 3)) == {"t1": 3.0, "t2": 0.0, "7": 2.0}
    tsv = tmp_path / "h.tsv"
    tsv.write_text("id\tlabel\n# a comment\nt1\tcorrect\nt2\tIncorrect \n")
    assert read_human_labels(tsv, LabelScale.binary(), known_ids={"t1", "t2"}) == {"t1": 1.0, "t2": 0.0}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"id": "t1", "label": 1}\n{"id": "zz", "label": 1}\n', r"h.txt:2: id 'zz' is not an item"),
        ('{"id": "t1", "label": 4}\n', r"h.txt:1 \(t1\): label '4' is not on the 0-3 scale"),
        ('{"id": "t1", "label": 1.5}\n', r"h.txt:1 \(t1\): label '1.5' is not on the 0-3 scale"),
        ("t1\t1\nt1\t2\n", r"h.txt:2: id 't1' is labelled twice"),
        ("t1 1\n", r"h.txt:1: a line needs 'id<TAB>label'"),
        ('{"id": "t1"}\n', r'h.txt:1: a JSON line needs "id" and "label"'),
        ("{oops\n", r"h.txt:1: not a JSON object"),
        ("\n# nothing\n", r"holds no label"),
    ],
)
def test_read_human_labels_bad_input(tmp_path, text, message):
    path = tmp_path / "h.txt"
    path.write_text(text)
    with pytest.raises(DataError, match=message):
        read_human_labels(path, LabelScale.integers(0, 3), known_ids={"t1", "t2"})


def test_read_human_labels_missing_file(tmp_path):
    with pytest.raises(DataError, match="human labels file .* does not exist"):
        read_human_labels(tmp_path / "none.jsonl", LabelScale.binary())
