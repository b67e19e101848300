"""compare: Holm-adjusted p-values and win/tie/loss counts, checked by hand and against scipy."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from mtrbench.analyses.multiple import holm
from mtrbench.analyses.significance import win_tie_loss
from mtrbench.cli import main


def test_holm_by_hand():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> running max keeps 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([None, 0.01, 0.5]) == [None, pytest.approx(0.02), pytest.approx(0.5)]  # no test: not counted in m
    assert holm([0.6, 0.7]) == [1.0, 1.0]  # capped at 1
    assert holm([]) == []


def test_holm_matches_statsmodels():
    multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
    p = np.random.default_rng(3).uniform(0, 0.2, size=36)
    assert holm(list(p)) == pytest.approx(list(multipletests(p, method="holm")[1]))


def _holm_by_definition(p: list[float]) -> list[float]:
    """Each p-value's adjusted value: the largest min(1, (m - rank) * p) over the p-values not above it."""
    m = len(p)
    ranked = sorted(p)
    return [max(min(1.0, (m - r) * ranked[r]) for r in range(m) if ranked[r] <= value) for value in p]


def test_win_tie_loss_by_hand():
    a = [0.5, 0.5, 0.2, 0.3]
    b = [0.7, 0.5 + 1e-9, 0.1, 0.3]
    assert win_tie_loss(a, b) == (1, 2, 1)  # 1e-9 is within the default epsilon: a tie
    assert win_tie_loss(a, b, epsilon=0.0) == (2, 1, 1)


def _score(tmp_path, name, run, qrels):
    from mtrbench.formats.qrels import format_qrels
    from mtrbench.formats.run import format_run

    (tmp_path / f"{name}.trec").write_text(format_run(run, name))
    (tmp_path / "q.qrels").write_text(format_qrels(qrels))
    assert (
        main(
            [
                "score",
                "--run",
                str(tmp_path / f"{name}.trec"),
                "--qrels",
                str(tmp_path / "q.qrels"),
                "--k",
                "1,3,5",
                "--metrics",
                "ndcg,recall,mrr",
                "--output",
                str(tmp_path / f"{name}.json"),
            ]
        )
        == 0
    )
    return tmp_path / f"{name}.json"


def test_compare_prints_and_records_holm_and_win_tie_loss(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    rng = np.random.default_rng(7)
    docs = [f"d{i}" for i in range(8)]
    qrels = {f"q{n}": {docs[n % 8]: 1} for n in range(30)}
    run_a = {q: {d: float(rng.random()) for d in docs} for q in qrels}
    run_b = {
        q: {**scores, next(iter(qrels[q])): scores[next(iter(qrels[q]))] + (0.4 if n % 3 else 0.0)}
        for n, (q, scores) in enumerate(run_a.items())
    }  # B lifts the relevant document in 2 of 3 queries
    a, b = _score(tmp_path, "a", run_a, qrels), _score(tmp_path, "b", run_b, qrels)
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--output", str(tmp_path / "cmp.json")]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines()), max(map(len, out.splitlines()))
    assert "Holm" in out and "win/tie/loss" in out
    comparison = json.loads((tmp_path / "cmp.json").read_text())
    rows = comparison["comparisons"]
    per_a = json.loads(a.read_text())["per_query"]
    per_b = json.loads(b.read_text())["per_query"]
    qids = sorted(per_a)
    t_raw = []
    for row in rows:
        x = np.array([per_a[q][row["metric"]] for q in qids])
        y = np.array([per_b[q][row["metric"]] for q in qids])
        d = y - x
        assert (row["wins"], row["ties"], row["losses"]) == (
            int((d > 1e-6).sum()),
            int((abs(d) <= 1e-6).sum()),
            int((d < -1e-6).sum()),
        )
        assert row["wins"] + row["ties"] + row["losses"] == comparison["paired_queries"] == 30
        if row["t_p_value"] is not None:
            assert row["t_p_value"] == pytest.approx(stats.ttest_rel(y, x).pvalue)
            t_raw.append(row["t_p_value"])
        # the printed table shows the counts
        assert f"{row['wins']}/{row['ties']}/{row['losses']}" in out
    tested = [r for r in rows if r["t_p_value"] is not None]
    assert [r["t_p_value_holm"] for r in tested] == pytest.approx(_holm_by_definition(t_raw))
    assert [r["randomization_p_value_holm"] for r in rows] == pytest.approx(
        _holm_by_definition([r["randomization_p_value"] for r in rows])
    )
    assert comparison["tie_epsilon"] == 1e-6
    assert any(r["t_p_value_holm"] > r["t_p_value"] for r in tested)  # the correction did something
