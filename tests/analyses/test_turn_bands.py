"""Per-turn bootstrap bands over conversations: against scipy's bootstrap and by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from mtrbench.analyses.turn_bands import conversation_bootstrap, turn_bands


def test_one_query_per_conversation_is_scipys_percentile_bootstrap():
    x = np.random.default_rng(5).random(37)
    low, high = conversation_bootstrap(x, np.ones(37), n_resamples=2000, seed=3)
    ref = stats.bootstrap(
        (x,),
        np.mean,
        n_resamples=2000,
        method="percentile",
        vectorized=True,
        random_state=np.random.default_rng(3),
        confidence_level=0.95,
    ).confidence_interval
    assert (low, high) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_bands_resample_conversations_and_average_queries():
    rows = [
        ("A", 1, 0.0),
        ("A", 1, 1.0),
        ("B", 1, 1.0),  # turn 1: conversation A has two queries
        ("A", 2, 0.5),
        ("B", 2, 0.25),
        ("C", 2, 1.0),
        ("C", 3, 0.4),
    ]
    bands = {b.turn: b for b in turn_bands(rows, n_resamples=500, seed=0)}
    assert sorted(bands) == [1, 2, 3]
    assert bands[1].mean == pytest.approx(2 / 3)  # the mean over queries, not over conversation means (0.75)
    assert (bands[1].n_queries, bands[1].n_conversations) == (3, 2)
    # resampling whole conversations: only A twice (1/2), A+B (2/3), B twice (1) are possible means
    assert bands[1].low == pytest.approx(0.5) and bands[1].high == pytest.approx(1.0)
    assert bands[2].mean == pytest.approx(1.75 / 3) and bands[2].low <= bands[2].mean <= bands[2].high
    assert (bands[3].low, bands[3].mean, bands[3].high) == (0.4, 0.4, 0.4)  # one conversation: no spread
    assert turn_bands(rows, n_resamples=500, seed=0) == turn_bands(rows, n_resamples=500, seed=0)  # seeded
