"""Topic-set size design (Sakai 2016), against the closed form worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from mtrbench.analyses.meta.inputs import ScoreMatrix
from mtrbench.analyses.meta.size import residual_variance, topic_set_size
from mtrbench.infra.errors import DataError, UserInputError


def _two_systems() -> ScoreMatrix:
    # Worked by hand: grand mean 0.4, both system means 0.4, unit means 0.3 / 0.4 / 0.5; residuals
    # -0.1, 0, 0.1 and 0.1, 0, -0.1: SS_E = 0.04 over (2-1)(3-1) = 2 degrees of freedom, V_E = 0.02.
    scores = np.array([[0.2, 0.4, 0.6], [0.4, 0.4, 0.4]])
    return ScoreMatrix("toy", "ndcg_at_3", ("a", "b"), ("c1_1", "c2_1", "c3_1"), ("c1", "c2", "c3"), scores)


def test_residual_variance_of_two_way_anova_without_replication_by_hand():
    assert residual_variance(_two_systems().scores) == pytest.approx(0.02)


def test_paired_t_size_is_sakais_closed_form_worked_by_hand():
    report = topic_set_size(_two_systems(), "conversation", delta=0.1, alpha=0.05, power=0.8)
    # sigma_d^2 = 2 V_E = 0.04, D = 0.1 / 0.2 = 0.5; z_0.025 = 1.95996, z_0.20 = 0.84162 (normal table):
    # n0 = ((1.95996 + 0.84162) / 0.5)^2 + 1.95996^2 / 2 = 31.3954 + 1.9207 = 33.316 -> 34
    n0 = ((1.95996 + 0.84162) / 0.5) ** 2 + 1.95996**2 / 2
    assert n0 == pytest.approx(33.316, abs=1e-3)
    assert report.paired_t.closed_form == 34
    # the noncentral t agrees: 34 pairs give power 0.8 for a standardized effect of 0.5 (as G*Power's 34)
    assert report.paired_t.required == 34
    assert report.current_size == 3 and report.paired_t.power_now < 0.2
    assert report.residual_variance == pytest.approx(0.02)


def test_anova_needs_more_units_for_more_systems_and_its_start_is_close():
    rng = np.random.default_rng(2)
    scores = 0.5 + rng.normal(0, 0.1, size=(6, 30))
    matrix = ScoreMatrix(
        "toy",
        "ndcg_at_3",
        tuple("abcdef"),
        tuple(f"q{j}" for j in range(30)),
        tuple(f"q{j}" for j in range(30)),
        scores,
    )
    report = topic_set_size(matrix, "query", delta=0.1)
    assert report.anova.required > report.paired_t.required
    assert abs(report.anova.required - report.anova.closed_form) <= 0.1 * report.anova.required
    smaller = topic_set_size(matrix, "query", delta=0.2)
    assert smaller.paired_t.required < report.paired_t.required


def test_size_refuses_what_it_cannot_design():
    with pytest.raises(UserInputError, match="--delta"):
        topic_set_size(_two_systems(), "conversation", delta=0)
    constant = ScoreMatrix("toy", "m", ("a", "b"), ("q1", "q2"), ("q1", "q2"), np.array([[0.5, 0.7], [0.3, 0.5]]))
    with pytest.raises(DataError, match="no residual variance"):
        topic_set_size(constant, "query", delta=0.1)
    tied = ScoreMatrix("toy", "m", ("a", "b"), ("q1", "q2"), ("q1", "q2"), np.full((2, 2), 0.5))
    with pytest.raises(DataError, match="the same on every query"):
        topic_set_size(tied, "query", delta=0.1)
