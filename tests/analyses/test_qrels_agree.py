"""`mtrbench qrels agree`: kappa equals scikit-learn's, the ranking tau equals scipy's on runs scored independently with
pytrec_eval, only shared pairs count, untidy qrels are read as trec_eval reads them, PPI with B as human labels."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import pytrec_eval
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from mtrbench.analyses.ppi import ppi_mean
from mtrbench.analyses.qrels_agreement import AgreeOptions, agree, cohen_kappa
from mtrbench.cli import main

QUERIES = [f"c{c}_{t}" for c in range(1, 4) for t in range(1, 3)]
DOCS = [f"d{i}" for i in range(8)]


def _fixture(tmp_path):
    rng = random.Random(7)
    llm = {q: {d: rng.choice([0, 0, 1, 2, 3]) for d in DOCS} for q in QUERIES}
    human = {}
    for q in QUERIES:
        human[q] = {d: min(3, max(0, g + rng.choice([-1, 0, 0, 0, 1]))) for d, g in list(llm[q].items())[:5]}
        human[q][f"x{q}"] = 1  # judged by B only
    # untidy, as real files are: tabs, runs of blanks, trailing blanks
    (tmp_path / "llm.qrels").write_text(
        "".join(f"{q}\t0\t{d}   {g}  \n" for q, docs in llm.items() for d, g in docs.items())
    )
    (tmp_path / "human.qrels").write_text(
        "".join(f"{q} Q0 {d}\t{g}\n" for q, docs in human.items() for d, g in docs.items())
    )
    runs = {}
    for n in range(4):
        run = {q: {d: float(rng.random()) for d in [*DOCS, f"x{q}"]} for q in QUERIES}
        runs[f"sys{n}"] = run
        (tmp_path / f"sys{n}.trec").write_text(
            "".join(
                f"{q} Q0 {d} {rank} {score:.6f} sys{n}\n"
                for q, docs in run.items()
                for rank, (d, score) in enumerate(sorted(docs.items(), key=lambda x: -x[1]), 1)
            )
        )
    return llm, human, runs


def _shared(llm, human):
    pairs = [(q, d) for q in llm for d in llm[q] if d in human.get(q, {})]
    return [llm[q][d] for q, d in pairs], [human[q][d] for q, d in pairs]


def _ndcg_means(runs, qrels):
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"})
    return [np.mean([v["ndcg_cut_10"] for v in evaluator.evaluate(run).values()]) for run in runs.values()]


def test_kappa_and_ranking_agreement_equal_sklearn_and_scipy(tmp_path):
    llm, human, runs = _fixture(tmp_path)
    result = agree(
        AgreeOptions(
            str(tmp_path / "llm.qrels"),
            str(tmp_path / "human.qrels"),
            threshold=2,
            runs=tuple(str(tmp_path / f"{name}.trec") for name in runs),
        )
    )
    a, b = _shared(llm, human)
    assert (result.pairs_first, result.pairs_second, result.shared) == (48, 36, 30)
    assert (result.only_first, result.only_second) == (18, 6)
    assert result.graded.kappa == pytest.approx(cohen_kappa_score(a, b))
    binary_a, binary_b = [int(g >= 2) for g in a], [int(g >= 2) for g in b]
    assert result.binary.kappa == pytest.approx(cohen_kappa_score(binary_a, binary_b))
    tp = sum(1 for x, y in zip(binary_a, binary_b) if x and y)
    assert result.binary.confusion[1][1] == tp and sum(map(sum, result.binary.confusion)) == 30
    assert result.graded.confusion[3][3] == sum(1 for x, y in zip(a, b) if x == y == 3)
    means_a, means_b = _ndcg_means(runs, llm), _ndcg_means(runs, human)
    assert result.ranking.means_first == pytest.approx(means_a)
    assert result.ranking.means_second == pytest.approx(means_b)
    assert result.ranking.kendall_tau == pytest.approx(kendalltau(means_a, means_b).statistic)
    assert result.ranking_measure == "ndcg_at_10"


def test_cohen_kappa_by_hand_and_undefined():
    # 10 items: A says 1 on six, B on five; they agree on 4 ones and 3 zeros -> p_o .7, p_e .6*.5+.4*.5 = .5
    a = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    b = [1, 1, 1, 1, 0, 0, 1, 0, 0, 0]
    k = cohen_kappa(a, b)
    assert (k.observed, k.expected) == pytest.approx((0.7, 0.5))
    assert k.kappa == pytest.approx(0.4) == pytest.approx(cohen_kappa_score(a, b))
    assert k.confusion == [[3, 1], [2, 4]]
    assert cohen_kappa([2, 2], [2, 2]).kappa is None


def test_cli_text_json_and_ppi(tmp_path, capsys):
    llm, human, _ = _fixture(tmp_path)
    out = tmp_path / "agree.json"
    argv = ["qrels", "agree", str(tmp_path / "llm.qrels"), str(tmp_path / "human.qrels"), "--human-labels"]
    assert main([*argv, "--threshold", "1", "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert "shared 30 (only A 18, only B 6)" in text
    document = json.loads(out.read_text())
    a, b = _shared(llm, human)
    assert document["binary"]["kappa"] == pytest.approx(cohen_kappa_score([g >= 1 for g in a], [g >= 1 for g in b]))
    assert "ranking" not in document
    relevant = {f"{q}|{d}": float(g >= 1) for q in llm for d, g in llm[q].items()}
    labelled = {f"{q}|{d}": float(human[q][d] >= 1) for q in llm for d in llm[q] if d in human[q]}
    expected = ppi_mean(relevant, labelled)
    by_hand = np.mean(list(relevant.values())) - np.mean([relevant[k] - labelled[k] for k in labelled])
    assert document["ppi"]["relevant share"]["ppi_mean"] == pytest.approx(by_hand) == pytest.approx(expected.ppi_mean)
    assert document["ppi"]["mean grade"]["items"] == 48 and document["ppi"]["mean grade"]["labelled"] == 30
    assert "PPI" in text


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--threshold", "0"], "--threshold must be at least 1"),
        (["--runs", "RUN0", "RUN1"], "at least three --runs"),
    ],
)
def test_cli_bad_options(tmp_path, capsys, extra, message):
    _fixture(tmp_path)
    extra = [
        str(tmp_path / "sys0.trec") if e == "RUN0" else str(tmp_path / "sys1.trec") if e == "RUN1" else e for e in extra
    ]
    assert main(["qrels", "agree", str(tmp_path / "llm.qrels"), str(tmp_path / "human.qrels"), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_cli_bad_files(tmp_path, capsys):
    (tmp_path / "a.qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "b.qrels").write_text("q2 0 d1 1\n")
    (tmp_path / "bad.qrels").write_text("q1 0 d1 1\nq1 0 d2 high\n")
    assert main(["qrels", "agree", str(tmp_path / "a.qrels"), str(tmp_path / "b.qrels")]) == 2
    assert "judge no (query, document) pair in common" in capsys.readouterr().err
    assert main(["qrels", "agree", str(tmp_path / "a.qrels"), str(tmp_path / "bad.qrels")]) == 2
    assert f"{tmp_path / 'bad.qrels'}:2 (q1): grade 'high' is not an integer" in capsys.readouterr().err
    assert main(["qrels", "agree", str(tmp_path / "a.qrels"), str(tmp_path / "none.qrels")]) == 2
    assert "does not exist" in capsys.readouterr().err
